//! Advantage estimators: grouping, normalisation, GRPO, RLOO, GiGPO, the invalid penalty,
//! broadcasting, and the all-in-one [`compute_advantages`].

pub mod anchor;
pub mod broadcast;
pub mod estimate;
pub mod gae;
pub mod gigpo;
pub mod group;
pub mod grpo;
pub mod normalize;
pub mod penalty;
pub mod rloo;

pub use anchor::{anchor_similarity, cluster_anchors};
pub use broadcast::broadcast_to_steps;
pub use estimate::{compute_advantages, AdvantageConfig, Estimator, SampleAdvantages, Signal};
pub use gae::gae;
pub use gigpo::{gigpo_advantages, GigpoAdvantages};
pub use group::group_indices;
pub use grpo::grpo_advantages;
pub use normalize::{mean_std, normalize_in_groups, Normalization};
pub use penalty::{penalized_score, penalized_scores};
pub use rloo::rloo_advantages;
