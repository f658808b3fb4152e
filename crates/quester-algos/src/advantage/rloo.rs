//! RLOO: each sample's score minus the mean score of the OTHER rollouts of its group.
//!
//! A rollout (one trial: all of its turns and attempts) is left out as a whole. Leaving out only
//! the sample itself would put the rollout's own other turns into its baseline, so a turn would
//! be compared partly with itself.

use crate::advantage::group::group_indices;
use crate::error::{check_finite, check_len, AlgoError};
use std::hash::Hash;

/// RLOO advantages with one score per sample: `x_i - mean(x_j : j in the group of i, rollout(j)
/// != rollout(i))`. `rollouts[i]` names the rollout of sample i (unique within its group). A
/// group of one rollout gets 0 (there is nothing to compare with).
pub fn rloo_advantages<K: Hash + Eq, R: Hash + Eq>(
    keys: &[K],
    rollouts: &[R],
    scores: &[f64],
) -> Result<Vec<f64>, AlgoError> {
    check_len("rloo scores", keys.len(), scores.len())?;
    check_len("rloo rollouts", keys.len(), rollouts.len())?;
    check_finite("rloo score", scores)?;
    let mut out = vec![0.0; scores.len()];
    for g in group_indices(keys) {
        let (sum, n) = g
            .iter()
            .fold((0.0, 0usize), |(s, n), &i| (s + scores[i], n + 1));
        let members: Vec<&R> = g.iter().map(|&i| &rollouts[i]).collect();
        for grp in group_indices(&members) {
            let own: Vec<usize> = grp.iter().map(|&j| g[j]).collect();
            let own_sum: f64 = own.iter().map(|&i| scores[i]).sum();
            let others = n - own.len();
            if others == 0 {
                continue;
            }
            let baseline = (sum - own_sum) / others as f64;
            for &i in &own {
                out[i] = scores[i] - baseline;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_rollout_by_hand() {
        // scores 1, 0, 2 (sum 3): 1 - (2/2) = 0; 0 - (3/2) = -1.5; 2 - (1/2) = 1.5; singleton 0.
        let a =
            rloo_advantages(&["t", "t", "t", "u"], &[0, 1, 2, 0], &[1.0, 0.0, 2.0, 9.0]).unwrap();
        assert_eq!(a, vec![0.0, -1.5, 1.5, 0.0]);
    }

    #[test]
    fn leaves_out_the_whole_rollout_by_hand() {
        // Group t: rollout 0 has turns scored 1 and 3, rollout 1 one turn scored 0.
        // Rollout 0's baseline is rollout 1's mean 0: 1 - 0 = 1, 3 - 0 = 3.
        // Rollout 1's baseline is rollout 0's mean 2: 0 - 2 = -2.
        // (Leaving out one sample would give 1 - 1.5 = -0.5 for the first turn.)
        let a = rloo_advantages(&["t", "t", "t"], &[0, 0, 1], &[1.0, 3.0, 0.0]).unwrap();
        assert_eq!(a, vec![1.0, 3.0, -2.0]);
        // One rollout alone in its group: nothing to compare with.
        let a = rloo_advantages(&["u", "u"], &[5, 5], &[1.0, 2.0]).unwrap();
        assert_eq!(a, vec![0.0, 0.0]);
    }
}
