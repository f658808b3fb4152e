//! MineSweeper configuration (LaMer's values by default).

use crate::env::EnvError;
use serde::Deserialize;

/// Board size, mine count and turn limit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MineSweeperConfig {
    pub rows: usize,
    pub cols: usize,
    pub mines: usize,
    /// Turns (clicks, valid or not) per attempt.
    pub max_turns: usize,
}

impl Default for MineSweeperConfig {
    fn default() -> Self {
        Self {
            rows: 6,
            cols: 6,
            mines: 3,
            max_turns: 7,
        }
    }
}

/// The largest side accepted; keeps rendering and parsing bounded.
pub const MAX_SIDE: usize = 50;

impl MineSweeperConfig {
    /// Checks the ranges; the error names the key and the allowed values.
    pub fn validate(&self) -> Result<(), EnvError> {
        let err = |message: String| EnvError::Config {
            env: "minesweeper".into(),
            message,
        };
        if !(1..=MAX_SIDE).contains(&self.rows) {
            return Err(err(format!(
                "rows = {} must be in 1..={MAX_SIDE}",
                self.rows
            )));
        }
        if !(1..=MAX_SIDE).contains(&self.cols) {
            return Err(err(format!(
                "cols = {} must be in 1..={MAX_SIDE}",
                self.cols
            )));
        }
        let cells = self.rows * self.cols;
        // At least one mine (otherwise the first click always wins) and one safe cell besides
        // the first click (otherwise there is nothing to play).
        if self.mines == 0 || self.mines + 2 > cells {
            return Err(err(format!(
                "mines = {} must be in 1..={} for a {}x{} board",
                self.mines,
                cells.saturating_sub(2),
                self.rows,
                self.cols
            )));
        }
        if self.max_turns == 0 {
            return Err(err("max_turns must be at least 1".into()));
        }
        Ok(())
    }
}
