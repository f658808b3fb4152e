//! quester-train's integration tests, one binary (each file a module; `common` holds the shared
//! configs and helpers).

mod bandit_learning;
mod common;
mod config_layout;
mod config_validation;
mod demos;
mod empo2;
mod eval_pass_k;
mod herl_learning;
mod mage_learning;
mod method_seams;
mod native_policy;
mod presets;
mod resume_and_nan;
mod rollout_engine;
mod sft;
mod sge_learning;
mod sokoban_learning;
