//! Tic-Tac-Toe configuration (MAGE's values by default).

use super::opponents::{OpponentKind, OPPONENT_NAMES};
use crate::env::EnvError;
use serde::Deserialize;

/// Whether the agent moves first (and plays X).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "AgentFirstRaw")]
pub enum AgentFirst {
    Yes,
    No,
    /// First on even seeds, second on odd seeds.
    Alternate,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AgentFirstRaw {
    Bool(bool),
    Text(String),
}

impl TryFrom<AgentFirstRaw> for AgentFirst {
    type Error = String;
    fn try_from(raw: AgentFirstRaw) -> Result<Self, String> {
        match raw {
            AgentFirstRaw::Bool(true) => Ok(Self::Yes),
            AgentFirstRaw::Bool(false) => Ok(Self::No),
            AgentFirstRaw::Text(s) if s == "alternate" => Ok(Self::Alternate),
            AgentFirstRaw::Text(s) if s == "true" => Ok(Self::Yes),
            AgentFirstRaw::Text(s) if s == "false" => Ok(Self::No),
            AgentFirstRaw::Text(s) => Err(format!(
                "agent_first = `{s}`: allowed values are true, false, \"alternate\""
            )),
        }
    }
}

impl AgentFirst {
    /// Whether the agent moves first in the task of `seed`.
    pub fn for_seed(self, seed: u64) -> bool {
        match self {
            Self::Yes => true,
            Self::No => false,
            Self::Alternate => seed & 1 == 0,
        }
    }
}

/// Opponent, seat, turn limit and MCTS settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TicTacToeConfig {
    /// `mcts`, `order0`..`order5` or `random`.
    pub opponent: String,
    /// true, false or "alternate" (seed parity).
    pub agent_first: AgentFirst,
    /// Agent turns per attempt (5 is enough to finish a game).
    pub max_turns: usize,
    /// MCTS simulations per opponent move.
    pub simulations: usize,
    /// MCTS exploration constant.
    pub uct_c: f64,
}

impl Default for TicTacToeConfig {
    fn default() -> Self {
        Self {
            opponent: "mcts".into(),
            agent_first: AgentFirst::Alternate,
            max_turns: 5,
            simulations: 100,
            uct_c: 1.4,
        }
    }
}

impl TicTacToeConfig {
    /// Checks the values; the error names the key and the allowed values.
    pub fn validate(&self) -> Result<OpponentKind, EnvError> {
        let err = |message: String| EnvError::Config {
            env: "tictactoe".into(),
            message,
        };
        let kind = OpponentKind::parse(&self.opponent).ok_or_else(|| {
            err(format!(
                "opponent = `{}`: allowed values are {OPPONENT_NAMES}",
                self.opponent
            ))
        })?;
        if self.max_turns == 0 {
            return Err(err("max_turns must be at least 1".into()));
        }
        if self.simulations == 0 || self.simulations > 1_000_000 {
            return Err(err(format!(
                "simulations = {} must be in 1..=1000000",
                self.simulations
            )));
        }
        if !self.uct_c.is_finite() || self.uct_c < 0.0 {
            return Err(err(format!(
                "uct_c = {} must be finite and >= 0",
                self.uct_c
            )));
        }
        Ok(kind)
    }
}
