//! GiGPO: an episode-level advantage within the task group plus a step-level advantage within
//! groups of samples that acted on the same anchor observation.

use crate::advantage::group::group_indices;
use crate::advantage::normalize::{normalize_in_groups, Normalization};
use crate::error::{check_finite, check_len, AlgoError};
use std::hash::Hash;

/// The three parts of a GiGPO advantage, aligned with the input samples.
#[derive(Debug, Clone, PartialEq)]
pub struct GigpoAdvantages {
    /// `A^E`: episode score relative to the task group.
    pub episode: Vec<f64>,
    /// `A^S`: return relative to the step group (0 in singleton step groups).
    pub step: Vec<f64>,
    /// `A = A^E + step_weight * A^S`.
    pub total: Vec<f64>,
}

/// GiGPO advantages.
///
/// - `episode_keys[i]`: the task group (episode group) of sample i.
/// - `scores[i]`: the episode-level score of sample i (its attempt's undiscounted reward, minus
///   any invalid penalty). The group mean is taken over samples, so each turn counts once.
/// - `step_keys[i]`: the anchor of sample i; step groups are samples with equal
///   `(episode_key, step_key)`, so a step group never spans two task groups.
/// - `returns[i]`: the discounted return G of sample i.
///
/// `mode` applies to both levels; `epsilon` guards the std division.
pub fn gigpo_advantages<K: Hash + Eq, S: Hash + Eq>(
    episode_keys: &[K],
    scores: &[f64],
    step_keys: &[S],
    returns: &[f64],
    step_weight: f64,
    mode: Normalization,
    epsilon: f64,
) -> Result<GigpoAdvantages, AlgoError> {
    let n = episode_keys.len();
    check_len("gigpo scores", n, scores.len())?;
    check_len("gigpo step keys", n, step_keys.len())?;
    check_len("gigpo returns", n, returns.len())?;
    check_finite("gigpo score", scores)?;
    check_finite("gigpo return", returns)?;
    let episode = normalize_in_groups(scores, &group_indices(episode_keys), mode, epsilon);
    let pair_keys: Vec<(&K, &S)> = episode_keys.iter().zip(step_keys).collect();
    let step = normalize_in_groups(returns, &group_indices(&pair_keys), mode, epsilon);
    let total = episode
        .iter()
        .zip(&step)
        .map(|(e, s)| e + step_weight * s)
        .collect();
    Ok(GigpoAdvantages {
        episode,
        step,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gigpo_by_hand() {
        // Task "t", two rollouts of 2 steps; task "u" one sample.
        // rollout A (score 1): anchors s0, s1; returns 0.95, 1.0
        // rollout B (score 0): anchors s0, s2; returns 0.0, 0.0
        // A^E (mean norm): group t scores [1, 1, 0, 0] -> mean 0.5 -> [0.5, 0.5, -0.5, -0.5];
        //   group u singleton -> 0.
        // Step groups: (t,s0) = {0, 2}: returns 0.95, 0 -> mean 0.475 -> +0.475, -0.475;
        //   (t,s1) = {1} and (t,s2) = {3} singletons -> 0; (u,s0) singleton -> 0.
        // total with w = 1: [0.975, 0.5, -0.975, -0.5, 0].
        let ek = ["t", "t", "t", "t", "u"];
        let sk = ["s0", "s1", "s0", "s2", "s0"];
        let sc = [1.0, 1.0, 0.0, 0.0, 1.0];
        let g = [0.95, 1.0, 0.0, 0.0, 1.0];
        let a = gigpo_advantages(&ek, &sc, &sk, &g, 1.0, Normalization::MeanNorm, 1e-6).unwrap();
        let want = [0.975, 0.5, -0.975, -0.5, 0.0];
        for (x, w) in a.total.iter().zip(want) {
            assert!((x - w).abs() < 1e-12, "{a:?}");
        }
        assert_eq!(a.step[4], 0.0);
        // mean_std_norm: A^E = +-0.5 / std([1,1,0,0]) = +-0.5/sqrt(1/3) = +-0.866025...
        // step group {0, 2}: +-0.475 / std([0.95, 0]) = +-0.475 / (0.95/sqrt2) = +-0.707107...
        let b = gigpo_advantages(&ek, &sc, &sk, &g, 1.0, Normalization::MeanStdNorm, 0.0).unwrap();
        let e = 0.5 / (1.0f64 / 3.0).sqrt();
        let s = 1.0 / 2f64.sqrt();
        assert!((b.total[0] - (e + s)).abs() < 1e-12);
        assert!((b.total[1] - e).abs() < 1e-12);
        assert!((b.total[2] + e + s).abs() < 1e-12);
    }

    #[test]
    fn step_weight_scales_only_the_step_part() {
        let ek = ["t", "t"];
        let sk = ["s", "s"];
        let a = gigpo_advantages(
            &ek,
            &[1.0, 0.0],
            &sk,
            &[2.0, 0.0],
            0.5,
            Normalization::MeanNorm,
            0.0,
        )
        .unwrap();
        // A^E = [0.5, -0.5]; A^S = [1, -1]; total = A^E + 0.5 A^S = [1, -1].
        assert_eq!(a.total, vec![1.0, -1.0]);
    }
}
