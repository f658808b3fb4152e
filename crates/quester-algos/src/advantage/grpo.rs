//! GRPO: each sample's score relative to the other samples of its group.

use crate::advantage::group::group_indices;
use crate::advantage::normalize::{normalize_in_groups, Normalization};
use crate::error::{check_finite, check_len, AlgoError};
use std::hash::Hash;

/// GRPO advantages: `(x_i - mean_g) / (std_g + epsilon)` (or mean only) within the group of
/// samples sharing `keys[i]`. Singleton groups get 0.
pub fn grpo_advantages<K: Hash + Eq>(
    keys: &[K],
    scores: &[f64],
    mode: Normalization,
    epsilon: f64,
) -> Result<Vec<f64>, AlgoError> {
    check_len("grpo scores", keys.len(), scores.len())?;
    check_finite("grpo score", scores)?;
    Ok(normalize_in_groups(
        scores,
        &group_indices(keys),
        mode,
        epsilon,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpo_by_hand() {
        // task a: scores 1, 0, 0, 1 -> mean 0.5, std = sqrt((4 * 0.25)/3) = sqrt(1/3) = 0.57735
        // -> +-0.5/0.57735 = +-0.866025; task b: scores 2, 4 -> mean 3, std sqrt(2) -> -+0.7071.
        let keys = ["a", "a", "b", "a", "a", "b"];
        let s = [1.0, 0.0, 2.0, 0.0, 1.0, 4.0];
        let a = grpo_advantages(&keys, &s, Normalization::MeanStdNorm, 0.0).unwrap();
        let x = 0.5 / (1.0f64 / 3.0).sqrt();
        let y = 1.0 / 2f64.sqrt();
        let want = [x, -x, -y, -x, x, y];
        for (g, w) in a.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{a:?}");
        }
        let m = grpo_advantages(&keys, &s, Normalization::MeanNorm, 0.0).unwrap();
        assert_eq!(m, vec![0.5, -0.5, -1.0, -0.5, 0.5, 1.0]);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(grpo_advantages(&["a"], &[1.0, 2.0], Normalization::MeanNorm, 0.0).is_err());
        assert!(
            grpo_advantages(&["a", "a"], &[1.0, f64::NAN], Normalization::MeanNorm, 0.0).is_err()
        );
    }
}
