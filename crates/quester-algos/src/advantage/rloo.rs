//! RLOO: each sample's score minus the mean of the OTHER samples of its group.

use crate::advantage::group::group_indices;
use crate::error::{check_finite, check_len, AlgoError};
use std::hash::Hash;

/// RLOO advantages `x_i - (sum_g - x_i) / (n_g - 1)`; singleton groups get 0.
pub fn rloo_advantages<K: Hash + Eq>(keys: &[K], scores: &[f64]) -> Result<Vec<f64>, AlgoError> {
    check_len("rloo scores", keys.len(), scores.len())?;
    check_finite("rloo score", scores)?;
    let mut out = vec![0.0; scores.len()];
    for g in group_indices(keys) {
        if g.len() < 2 {
            continue;
        }
        let sum: f64 = g.iter().map(|&i| scores[i]).sum();
        let others = (g.len() - 1) as f64;
        for &i in &g {
            out[i] = scores[i] - (sum - scores[i]) / others;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rloo_by_hand() {
        // scores 1, 0, 2 (sum 3): 1 - (2/2) = 0; 0 - (3/2) = -1.5; 2 - (1/2) = 1.5; singleton 0.
        let a = rloo_advantages(&["t", "t", "t", "u"], &[1.0, 0.0, 2.0, 9.0]).unwrap();
        assert_eq!(a, vec![0.0, -1.5, 1.5, 0.0]);
    }
}
