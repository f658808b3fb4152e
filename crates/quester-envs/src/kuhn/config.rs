//! Kuhn Poker configuration (MAGE's values by default).

use super::opponents::{KuhnBot, BOT_NAMES};
use crate::env::EnvError;
use serde::Deserialize;

/// The agent's seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentPosition {
    First,
    Second,
    /// First on even seeds, second on odd seeds.
    Alternate,
}

impl AgentPosition {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "first" => Some(Self::First),
            "second" => Some(Self::Second),
            "alternate" => Some(Self::Alternate),
            _ => None,
        }
    }

    /// The agent's seat (0 acts first) in the task of `seed`.
    pub fn seat_for_seed(self, seed: u64) -> usize {
        match self {
            Self::First => 0,
            Self::Second => 1,
            Self::Alternate => (seed & 1) as usize,
        }
    }
}

/// Opponent, seat, reward scale and turn limit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KuhnConfig {
    /// `conservative`, `aggressive`, `intermediate`, `cfr` or `random`.
    pub opponent: String,
    /// `first`, `second` or `alternate` (seed parity).
    pub agent_position: String,
    /// Reward = reward_scale x the agent's chip payoff.
    pub reward_scale: f64,
    /// Agent decisions per attempt (2 is the most a hand needs).
    pub max_turns: usize,
}

impl Default for KuhnConfig {
    fn default() -> Self {
        Self {
            opponent: "cfr".into(),
            agent_position: "alternate".into(),
            reward_scale: 5.0,
            max_turns: 2,
        }
    }
}

impl KuhnConfig {
    /// Checks the values; the error names the key and the allowed values.
    pub fn validate(&self) -> Result<(KuhnBot, AgentPosition), EnvError> {
        let err = |message: String| EnvError::Config {
            env: "kuhn".into(),
            message,
        };
        let bot = KuhnBot::parse(&self.opponent).ok_or_else(|| {
            err(format!(
                "opponent = `{}`: allowed values are {BOT_NAMES}",
                self.opponent
            ))
        })?;
        let pos = AgentPosition::parse(&self.agent_position).ok_or_else(|| {
            err(format!(
                "agent_position = `{}`: allowed values are first, second, alternate",
                self.agent_position
            ))
        })?;
        if !self.reward_scale.is_finite() || self.reward_scale <= 0.0 {
            return Err(err(format!(
                "reward_scale = {} must be finite and > 0",
                self.reward_scale
            )));
        }
        if self.max_turns == 0 {
            return Err(err("max_turns must be at least 1".into()));
        }
        Ok((bot, pos))
    }
}
