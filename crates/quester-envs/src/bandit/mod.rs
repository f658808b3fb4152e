//! The meta-bandit: the fastest check that meta-RL learns to explore. Each task hides one good
//! arm; scouting reveals it at the cost of the attempt. See `docs/envs/bandit.md`.

mod config;
mod env;
pub mod expert;
mod spec;

pub use config::BanditConfig;
pub use env::{parse_bandit_action, BanditAction, BanditEnv};
pub use spec::SPEC;
