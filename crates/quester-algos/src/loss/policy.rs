//! The full policy loss over a batch of responses: PPO (or HeRL hindsight) per token, KL to a
//! reference, entropy bonus, low-probability masking and aggregation, with the gradient with
//! respect to every token's new log-prob.

use crate::error::{check_finite, check_len, AlgoError};
use crate::loss::aggregate::{aggregate, response_weights, Aggregation};
use crate::loss::correction::RolloutCorrection;
use crate::loss::entropy::aggregated_entropy;
use crate::loss::hindsight::hindsight_token;
use crate::loss::kl::{kl_token, KlEstimator};
use crate::loss::mask::keep_response;
use crate::loss::ppo::ppo_token;
use serde::{Deserialize, Serialize};

/// Which per-token objective a response is trained with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenObjective {
    /// PPO clipped surrogate (with dual clip).
    #[default]
    Clipped,
    /// HeRL hindsight: `-A rho / (rho + gamma)`, unclipped.
    Hindsight,
}

/// Policy-loss settings. Defaults are LaMer's: clip 0.2 / 0.2, dual clip 3, token mean,
/// entropy 0.001, no KL, no masking; HeRL's gamma 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyLossConfig {
    /// Lower clip: the ratio is clipped at `1 - clip_low`.
    pub clip_low: f64,
    /// Upper clip: the ratio is clipped at `1 + clip_high` (EMPO2: 0.3).
    pub clip_high: f64,
    /// Dual clip c for negative advantages; 0 disables it, otherwise it must exceed 1.
    pub dual_clip: f64,
    pub aggregation: Aggregation,
    /// Weight of the entropy bonus (subtracted from the loss).
    pub entropy_coef: f64,
    /// Weight of the KL penalty; > 0 requires reference log-probs.
    pub kl_coef: f64,
    pub kl_estimator: KlEstimator,
    /// EMPO2: drop a response whose minimum behaviour log-prob is below this (e.g. -5).
    pub min_behaviour_logp: Option<f64>,
    /// HeRL's gamma in `rho / (rho + gamma)` (1 for instruction following, 0.1 medical).
    pub hindsight_gamma: f64,
    /// How the trainer weighs tokens another distribution sampled (see
    /// [`crate::loss::correction`]); the loss itself applies the weights it is given.
    pub rollout_correction: RolloutCorrection,
    /// TIS's cap C on each token's importance weight (>= 1; 2 as in the TIS write-up and verl).
    pub tis_cap: f64,
}

impl Default for PolicyLossConfig {
    fn default() -> Self {
        PolicyLossConfig {
            clip_low: 0.2,
            clip_high: 0.2,
            dual_clip: 3.0,
            aggregation: Aggregation::TokenMean,
            entropy_coef: 0.001,
            kl_coef: 0.0,
            kl_estimator: KlEstimator::K3,
            min_behaviour_logp: None,
            hindsight_gamma: 1.0,
            rollout_correction: RolloutCorrection::None,
            tis_cap: 2.0,
        }
    }
}

impl PolicyLossConfig {
    /// Checks every value, naming the bad key and the allowed range.
    pub fn validate(&self) -> Result<(), AlgoError> {
        let bad = |key: &str, v: f64, allowed: &str| {
            Err(AlgoError::Config {
                key: key.into(),
                value: v.to_string(),
                allowed: allowed.into(),
            })
        };
        if !(0.0..1.0).contains(&self.clip_low) {
            return bad("clip_low", self.clip_low, "a number in [0, 1)");
        }
        if !(self.clip_high >= 0.0 && self.clip_high.is_finite()) {
            return bad("clip_high", self.clip_high, "a finite number >= 0");
        }
        if !(self.dual_clip == 0.0 || (self.dual_clip > 1.0 && self.dual_clip.is_finite())) {
            return bad(
                "dual_clip",
                self.dual_clip,
                "0 (off) or a finite number > 1",
            );
        }
        for (key, v) in [
            ("entropy_coef", self.entropy_coef),
            ("kl_coef", self.kl_coef),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return bad(key, v, "a finite number >= 0");
            }
        }
        if !(self.hindsight_gamma > 0.0 && self.hindsight_gamma.is_finite()) {
            return bad(
                "hindsight_gamma",
                self.hindsight_gamma,
                "a finite number > 0",
            );
        }
        if !(self.tis_cap >= 1.0 && self.tis_cap.is_finite()) {
            return bad("tis_cap", self.tis_cap, "a finite number >= 1");
        }
        if let Some(m) = self.min_behaviour_logp {
            if m.is_nan() {
                return bad("min_behaviour_logp", m, "a log-prob (number <= 0)");
            }
        }
        Ok(())
    }
}

/// One response's tokens, as plain slices of equal length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResponseTokens<'a> {
    /// Log-probs of the sampled tokens under the policy being trained, in the TRAINING context.
    pub new_logp: &'a [f64],
    /// Behaviour log-probs recorded at sampling time (possibly in another context: EMPO2 tips,
    /// HeRL hindsight prompt), so `rho = exp(new - old)` is the importance ratio.
    pub old_logp: &'a [f64],
    /// Reference-model log-probs; required when `kl_coef > 0`.
    pub ref_logp: Option<&'a [f64]>,
    /// Per-token entropies of the policy; required when `entropy_coef > 0`.
    pub entropy: Option<&'a [f64]>,
    /// Per-token importance weights of the policy-gradient term (TIS), constants in the
    /// backward pass; None weighs every token 1. The KL term is not weighted.
    pub is_weight: Option<&'a [f64]>,
    /// The response's advantage, applied to each of its tokens.
    pub advantage: f64,
    pub objective: TokenObjective,
}

/// The loss, its parts and its gradient.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyLoss {
    /// `pg + kl_coef * kl - entropy_coef * entropy`.
    pub loss: f64,
    /// `grad[i][t] = d loss / d new_logp[i][t]` (entropy excluded, see [`policy_loss`]).
    pub grad: Vec<Vec<f64>>,
    /// The aggregation weight of each response's tokens (0 for masked or empty responses).
    pub response_weight: Vec<f64>,
    /// Whether each response was kept by low-probability masking.
    pub kept: Vec<bool>,
    pub stats: LossStats,
}

/// Diagnostics of one loss evaluation (token fractions over kept tokens).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LossStats {
    /// Aggregated policy-gradient term.
    pub pg_loss: f64,
    /// Aggregated KL estimate (0 when `kl_coef = 0` and no reference given).
    pub kl: f64,
    /// Aggregated entropy (0 when no entropies given).
    pub entropy: f64,
    /// Share of kept clipped-objective tokens where the ratio clip took over.
    pub clip_fraction: f64,
    /// Share of kept clipped-objective tokens where the dual clip took over.
    pub dual_clip_fraction: f64,
    /// Token mean of `old_logp - new_logp` over kept tokens (k1 estimate of KL(old || new)).
    pub approx_kl_old_new: f64,
    pub masked_responses: usize,
    pub kept_tokens: usize,
}

/// Computes the policy loss and `dL/d new_logp` for every token.
///
/// Contract with the trainer: `loss` depends on the model only through the new log-probs, so
/// back-propagating the surrogate `S = sum_i sum_t grad[i][t] * logp_theta[i][t]` (with `grad`
/// as constants) gives exactly `dL/dtheta`. The sum can be split over micro-batches in any way,
/// because the aggregation weights already sit inside `grad`: pass the WHOLE mini-batch here,
/// then back-propagate its parts. The entropy bonus is in `loss` but not in `grad`; to train
/// with it add `-entropy_coef * sum_i response_weight[i] * sum_t H_it(theta)` to `S`.
pub fn policy_loss(
    responses: &[ResponseTokens],
    cfg: &PolicyLossConfig,
) -> Result<PolicyLoss, AlgoError> {
    cfg.validate()?;
    for (i, r) in responses.iter().enumerate() {
        let n = r.new_logp.len();
        check_len(&format!("old_logp of response {i}"), n, r.old_logp.len())?;
        check_finite(&format!("new_logp of response {i}"), r.new_logp)?;
        check_finite(&format!("old_logp of response {i}"), r.old_logp)?;
        check_finite(&format!("advantage of response {i}"), &[r.advantage])?;
        match r.ref_logp {
            Some(rl) => {
                check_len(&format!("ref_logp of response {i}"), n, rl.len())?;
                check_finite(&format!("ref_logp of response {i}"), rl)?;
            }
            None if cfg.kl_coef > 0.0 => {
                return Err(AlgoError::MissingInput(format!(
                    "ref_logp of response {i} (kl_coef > 0)"
                )))
            }
            None => {}
        }
        if let Some(w) = r.is_weight {
            check_len(&format!("is_weight of response {i}"), n, w.len())?;
            check_finite(&format!("is_weight of response {i}"), w)?;
        }
        match r.entropy {
            Some(e) => {
                check_len(&format!("entropy of response {i}"), n, e.len())?;
                check_finite(&format!("entropy of response {i}"), e)?;
            }
            None if cfg.entropy_coef > 0.0 => {
                return Err(AlgoError::MissingInput(format!(
                    "entropy of response {i} (entropy_coef > 0)"
                )))
            }
            None => {}
        }
    }

    let kept: Vec<bool> = responses
        .iter()
        .map(|r| keep_response(r.old_logp, cfg.min_behaviour_logp))
        .collect();
    let lengths: Vec<usize> = responses.iter().map(|r| r.new_logp.len()).collect();
    let weights = response_weights(&lengths, &kept, cfg.aggregation);

    let mut pg = Vec::with_capacity(responses.len());
    let mut kl = Vec::with_capacity(responses.len());
    let mut grad = Vec::with_capacity(responses.len());
    let mut stats = LossStats::default();
    let (mut clip_n, mut dual_n, mut clipped_tokens) = (0usize, 0usize, 0usize);
    let mut log_ratio_sum = 0.0;
    for (i, r) in responses.iter().enumerate() {
        let n = r.new_logp.len();
        let (mut pg_i, mut kl_i, mut g_i) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        if !kept[i] {
            stats.masked_responses += 1;
        } else {
            for t in 0..n {
                let (lp, op) = (r.new_logp[t], r.old_logp[t]);
                let (l, g) = match r.objective {
                    TokenObjective::Clipped => {
                        let term = ppo_token(
                            lp,
                            op,
                            r.advantage,
                            cfg.clip_low,
                            cfg.clip_high,
                            cfg.dual_clip,
                        );
                        clipped_tokens += 1;
                        clip_n += usize::from(term.clipped);
                        dual_n += usize::from(term.dual_clipped);
                        (term.loss, term.grad)
                    }
                    TokenObjective::Hindsight => {
                        hindsight_token(lp, op, r.advantage, cfg.hindsight_gamma)
                    }
                };
                let w = r.is_weight.map_or(1.0, |w| w[t]);
                pg_i[t] = w * l;
                g_i[t] = w * g;
                if let Some(rl) = r.ref_logp {
                    let (v, dv) = kl_token(lp, rl[t], cfg.kl_estimator);
                    kl_i[t] = v;
                    g_i[t] += cfg.kl_coef * dv;
                }
                g_i[t] *= weights[i];
                log_ratio_sum += op - lp;
            }
            stats.kept_tokens += n;
        }
        pg.push(pg_i);
        kl.push(kl_i);
        grad.push(g_i);
    }
    stats.pg_loss = aggregate(&pg, &weights);
    stats.kl = aggregate(&kl, &weights);
    let entropies: Vec<Vec<f64>> = responses
        .iter()
        .map(|r| r.entropy.map(<[f64]>::to_vec).unwrap_or_default())
        .collect();
    let has_entropy = responses.iter().all(|r| r.entropy.is_some());
    stats.entropy = if has_entropy {
        aggregated_entropy(&entropies, &weights)
    } else {
        0.0
    };
    if clipped_tokens > 0 {
        stats.clip_fraction = clip_n as f64 / clipped_tokens as f64;
        stats.dual_clip_fraction = dual_n as f64 / clipped_tokens as f64;
    }
    if stats.kept_tokens > 0 {
        stats.approx_kl_old_new = log_ratio_sum / stats.kept_tokens as f64;
    }
    let loss = stats.pg_loss + cfg.kl_coef * stats.kl - cfg.entropy_coef * stats.entropy;
    Ok(PolicyLoss {
        loss,
        grad,
        response_weight: weights,
        kept,
        stats,
    })
}
