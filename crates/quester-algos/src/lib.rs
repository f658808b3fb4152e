//! The RL math of quester: returns, advantages and policy losses as pure functions over plain
//! data. No tensors, no I/O; every function is unit-tested on hand-computed cases and every
//! gradient against finite differences. See `docs/algorithms.md` for the formulas.

pub mod advantage;
pub mod error;
pub mod loss;
pub mod passk;
pub mod returns;
pub mod reward;
pub mod sample;
pub mod trial;

pub use advantage::{
    compute_advantages, AdvantageConfig, Estimator, Normalization, SampleAdvantages, Signal,
};
pub use error::AlgoError;
pub use loss::{
    policy_loss, Aggregation, KlEstimator, LossStats, PolicyLoss, PolicyLossConfig, ResponseTokens,
    TokenObjective,
};
pub use passk::{pass_at_k, summarize, EvalSummary};
pub use returns::{
    cross_attempt_returns, differential_rewards, discounted_returns, mage_differential_rewards,
    sample_returns, CrossAttemptReturn, ReturnConfig, TrialReturns,
};
pub use reward::{hindsight_bonus, length_penalty, novelty_reward};
pub use sample::{StepKind, StepRecord};
