//! The RL math of quester: returns, advantages and policy losses as pure functions over plain
//! data. No tensors, no I/O; every function is unit-tested on hand-computed cases and every
//! gradient against finite differences. See `docs/algorithms.md` for the formulas.
//!
//! ```
//! use quester_algos::*;
//! # fn main() -> Result<(), AlgoError> {
//! // Two trials of one task: trial 0 fails attempt 0, reflects, wins attempt 1; trial 1 fails.
//! let samples = vec![
//!     StepRecord::play("task0", 0, 0, 0, "obs-a", 0.0),
//!     StepRecord::reflect("task0", 0, 1),
//!     StepRecord::play("task0", 0, 1, 0, "obs-a", 1.0).with_won(true),
//!     StepRecord::play("task0", 1, 0, 0, "obs-a", 0.0),
//! ];
//! let adv = compute_advantages(&samples, &AdvantageConfig::default())?;
//! // The failed-but-followed-by-success attempt 0 of trial 0 beats trial 1's failure.
//! assert!(adv.advantage[0] > adv.advantage[3]);
//! let (new, old, ent) = ([-0.3, -1.2], [-0.35, -1.1], [0.8, 1.1]);
//! let response = ResponseTokens {
//!     new_logp: &new,
//!     old_logp: &old,
//!     ref_logp: None,
//!     entropy: Some(&ent),
//!     is_weight: None,
//!     advantage: adv.advantage[0],
//!     objective: TokenObjective::Clipped,
//! };
//! let loss = policy_loss(&[response], &PolicyLossConfig::default())?;
//! // The trainer back-propagates sum_i sum_t loss.grad[i][t] * logp_theta[i][t].
//! assert_eq!(loss.grad[0].len(), 2);
//! # Ok(())
//! # }
//! ```

pub mod advantage;
pub mod bootstrap;
pub mod error;
pub mod loss;
pub mod outcomes;
pub mod passk;
pub mod returns;
pub mod reward;
pub mod sample;
pub mod trial;

pub use advantage::{
    compute_advantages, AdvantageConfig, Estimator, Normalization, SampleAdvantages, Signal,
};
pub use bootstrap::{mean_ci, paired_diff_ci, BootstrapConfig, Interval};
pub use error::AlgoError;
pub use loss::{
    policy_loss, sampler_gap, truncated_is_weights, weight_stats, Aggregation, KlEstimator,
    LossStats, PolicyLoss, PolicyLossConfig, ResponseTokens, RolloutCorrection, SamplerGap,
    TokenObjective, WeightStats,
};
pub use outcomes::DistinctOutcomes;
pub use passk::{
    pass_at_k, pass_at_k_curve, pass_at_k_unbiased, powers_of_two_up_to, summarize, EvalSummary,
};
pub use returns::{
    cross_attempt_returns, differential_rewards, discounted_returns, mage_differential_rewards,
    sample_returns, CrossAttemptReturn, ReturnConfig, TrialReturns,
};
pub use reward::{hindsight_bonus, length_penalty, novelty_reward};
pub use sample::{StepKind, StepRecord};
