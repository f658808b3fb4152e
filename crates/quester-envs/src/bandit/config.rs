//! Meta-bandit configuration.

use crate::env::EnvError;
use serde::Deserialize;

/// Arms, turns and whether scouting is offered.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BanditConfig {
    /// Number of arms K.
    pub arms: usize,
    /// Turns per attempt reported to the trainer (every action ends the attempt).
    pub max_turns: usize,
    /// Offer `<action>scout</action>`, which reveals the good arm for reward 0.
    pub scout: bool,
}

impl Default for BanditConfig {
    fn default() -> Self {
        Self {
            arms: 4,
            max_turns: 1,
            scout: true,
        }
    }
}

/// The most arms accepted (keeps the observation short).
pub const MAX_ARMS: usize = 100;

impl BanditConfig {
    /// Checks the ranges; the error names the key and the allowed values.
    pub fn validate(&self) -> Result<(), EnvError> {
        let err = |message: String| EnvError::Config {
            env: "bandit".into(),
            message,
        };
        if !(2..=MAX_ARMS).contains(&self.arms) {
            return Err(err(format!(
                "arms = {} must be in 2..={MAX_ARMS}",
                self.arms
            )));
        }
        if self.max_turns == 0 {
            return Err(err("max_turns must be at least 1".into()));
        }
        Ok(())
    }
}
