//! Policy losses returning both the value and `dL/d logp` of every token (see
//! [`policy_loss`] for the contract with the model-side backward pass).

pub mod aggregate;
pub mod correction;
pub mod entropy;
pub mod hindsight;
pub mod kl;
pub mod mask;
pub mod policy;
pub mod ppo;
pub mod value;

pub use aggregate::{aggregate, response_weights, Aggregation};
pub use correction::{
    sampler_gap, truncated_is_weights, weight_stats, RolloutCorrection, SamplerGap, WeightStats,
};
pub use entropy::aggregated_entropy;
pub use hindsight::hindsight_token;
pub use kl::{kl_token, KlEstimator};
pub use mask::keep_response;
pub use policy::{
    policy_loss, LossStats, PolicyLoss, PolicyLossConfig, ResponseTokens, TokenObjective,
};
pub use ppo::{ppo_token, TokenTerm};
pub use value::clipped_value_loss;
