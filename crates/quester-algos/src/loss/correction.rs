//! Rollout correction: the tokens were drawn from the sampler's distribution (another engine,
//! another precision, or tempered / truncated sampling), while the PPO ratio's denominator is
//! the trainer's own log-prob at the old weights. Truncated importance sampling (TIS) weights
//! each token's policy-gradient term by `min(pi_trainer / pi_sampler, C)`, a constant in the
//! backward pass: unbiased where the ratio stays below C, bounded variance where it does not.

use serde::{Deserialize, Serialize};

/// How the loss accounts for the sampler / trainer gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RolloutCorrection {
    /// The sampled tokens are trained as if the trainer had drawn them.
    #[default]
    None,
    /// Truncated importance sampling: each token's term times `min(exp(old - sampler), cap)`.
    Tis,
}

/// The TIS weight of every token: `min(exp(trainer_logp - sampler_logp), cap)`.
/// `trainer_logp` are the trainer's log-probs at the weights that sampled (the PPO ratio's
/// denominators), `sampler_logp` those the sampler recorded. Slices of unequal length (a
/// sample without recorded log-probs) give weight 1 on every token of `trainer_logp`.
pub fn truncated_is_weights(trainer_logp: &[f64], sampler_logp: &[f64], cap: f64) -> Vec<f64> {
    if trainer_logp.len() != sampler_logp.len() {
        return vec![1.0; trainer_logp.len()];
    }
    trainer_logp
        .iter()
        .zip(sampler_logp)
        .map(|(&t, &s)| (t - s).exp().min(cap))
        .collect()
}

/// What the weights of a step were: their token mean and the share truncated at the cap.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WeightStats {
    pub mean: f64,
    pub truncated_fraction: f64,
    pub tokens: usize,
}

/// The token mean of `weights` and the share of tokens whose untruncated ratio exceeded `cap`
/// (those whose weight equals it).
pub fn weight_stats(weights: &[Vec<f64>], cap: f64) -> WeightStats {
    let tokens: usize = weights.iter().map(Vec::len).sum();
    if tokens == 0 {
        return WeightStats::default();
    }
    let all = weights.iter().flatten();
    let sum: f64 = all.clone().sum();
    let truncated = all.filter(|&&w| w >= cap).count();
    WeightStats {
        mean: sum / tokens as f64,
        truncated_fraction: truncated as f64 / tokens as f64,
        tokens,
    }
}

/// The sampler / trainer gap on tokens the sampler drew from the distribution it recorded:
/// the mean |d log p| and the k3 estimate of KL(sampler || trainer), `exp(d) - d - 1` with
/// `d = trainer - sampler` (unbiased for tokens drawn from the sampler, and never negative).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SamplerGap {
    pub mean_abs_logp: f64,
    pub kl: f64,
    pub tokens: usize,
}

/// See [`SamplerGap`]; `pairs` are `(sampler, trainer)` log-probs of the same tokens. None when
/// there are none.
pub fn sampler_gap(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<SamplerGap> {
    let (mut abs, mut kl, mut tokens) = (0.0, 0.0, 0usize);
    for (sampler, trainer) in pairs {
        let d = trainer - sampler;
        abs += d.abs();
        kl += d.exp() - d - 1.0;
        tokens += 1;
    }
    (tokens > 0).then(|| SamplerGap {
        mean_abs_logp: abs / tokens as f64,
        kl: kl / tokens as f64,
        tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_by_hand() {
        // trainer 0.5 vs sampler 0.25: ratio 2; 0.25 vs 0.5: ratio 0.5; 0.9 vs 0.1: 9, capped.
        let t = [0.5f64.ln(), 0.25f64.ln(), 0.9f64.ln()];
        let s = [0.25f64.ln(), 0.5f64.ln(), 0.1f64.ln()];
        let w = truncated_is_weights(&t, &s, 3.0);
        assert!((w[0] - 2.0).abs() < 1e-12);
        assert!((w[1] - 0.5).abs() < 1e-12);
        assert_eq!(w[2], 3.0);
        let st = weight_stats(&[w], 3.0);
        assert!((st.mean - 5.5 / 3.0).abs() < 1e-12);
        assert!((st.truncated_fraction - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(st.tokens, 3);
        // Equal log-probs weigh 1; a sample without recorded log-probs weighs 1.
        assert_eq!(
            truncated_is_weights(&[-1.0, -2.0], &[-1.0, -2.0], 2.0),
            [1.0, 1.0]
        );
        assert_eq!(truncated_is_weights(&[-1.0, -2.0], &[], 2.0), [1.0, 1.0]);
        assert_eq!(weight_stats(&[], 2.0), WeightStats::default());
    }

    #[test]
    fn gap_by_hand() {
        // d = ln 2: |d| = 0.693147, k3 = 2 - ln 2 - 1; d = -ln 2: k3 = 0.5 + ln 2 - 1.
        let g = sampler_gap([(0.25f64.ln(), 0.5f64.ln()), (0.5f64.ln(), 0.25f64.ln())]).unwrap();
        let ln2 = 2f64.ln();
        assert!((g.mean_abs_logp - ln2).abs() < 1e-12);
        assert!((g.kl - ((1.0 - ln2) + (ln2 - 0.5)) / 2.0).abs() < 1e-12);
        assert_eq!(g.tokens, 2);
        assert_eq!(sampler_gap([]), None);
        let same = sampler_gap([(-0.3, -0.3)]).unwrap();
        assert_eq!((same.mean_abs_logp, same.kl), (0.0, 0.0));
    }
}
