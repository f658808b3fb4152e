//! Sokoban configuration (defaults = LaMer's 6x6, 2-box setting).

use serde::{Deserialize, Serialize};

use crate::env::EnvError;

/// Sokoban settings. Built from a TOML table with `quester_config::from_table`; unknown keys are
/// rejected. [`SokobanConfig::validate`] checks the values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SokobanConfig {
    /// Room width in cells, border walls included.
    pub width: usize,
    /// Room height in cells, border walls included.
    pub height: usize,
    pub num_boxes: usize,
    /// Recursion budget (ttl) of the reverse-play depth-first search.
    pub search_depth: usize,
    /// Bound on distinct states the reverse-play search explores.
    pub max_explored_states: usize,
    /// Move cap of one episode (attempt); every move counts, wasted ones included.
    pub max_moves: usize,
    /// Moves the agent may give in one turn.
    pub max_moves_per_turn: usize,
    /// Turns per attempt.
    pub max_turns: usize,
    /// Shortest accepted optimal solution (moves) of a generated room.
    pub min_solution_len: usize,
    /// Longest accepted optimal solution (moves) of a generated room.
    pub max_solution_len: usize,
    /// Extra rooms drawn when one falls outside the solution-length window.
    pub max_resamples: usize,
    /// Walk the player 1-3 random steps after generation (LaMer/RAGEN).
    pub player_displacement: bool,
    /// End the episode (not won) when no solution exists any more.
    pub deadlock_ends: bool,
    /// A level file to load instead of generating rooms.
    pub level: Option<String>,
}

impl Default for SokobanConfig {
    fn default() -> Self {
        SokobanConfig {
            width: 6,
            height: 6,
            num_boxes: 2,
            search_depth: 100,
            max_explored_states: 300_000,
            max_moves: 30,
            max_moves_per_turn: 3,
            max_turns: 7,
            min_solution_len: 5,
            max_solution_len: 21,
            max_resamples: 10,
            player_displacement: true,
            deadlock_ends: true,
            level: None,
        }
    }
}

/// Largest generated room side (generator states are 256-cell bitsets).
pub const MAX_GENERATED_CELLS: usize = 256;

impl SokobanConfig {
    /// Checks value ranges; the error names the key and the allowed values.
    pub fn validate(&self) -> Result<(), EnvError> {
        let bad = |key: &str, allowed: &str, got: String| {
            Err(EnvError::Config {
                env: "sokoban".into(),
                message: format!("`{key}` must be {allowed}, got {got}"),
            })
        };
        if self.width < 3 || self.height < 3 || self.width * self.height > MAX_GENERATED_CELLS {
            return bad(
                "width/height",
                "at least 3 each with width x height <= 256",
                format!("{}x{}", self.width, self.height),
            );
        }
        if self.num_boxes == 0 {
            return bad("num_boxes", ">= 1", self.num_boxes.to_string());
        }
        if self.search_depth == 0 {
            return bad("search_depth", ">= 1", "0".into());
        }
        if self.max_moves == 0 {
            return bad("max_moves", ">= 1", "0".into());
        }
        if self.max_moves_per_turn == 0 {
            return bad("max_moves_per_turn", ">= 1", "0".into());
        }
        if self.max_turns == 0 {
            return bad("max_turns", ">= 1", "0".into());
        }
        if self.min_solution_len > self.max_solution_len {
            return bad(
                "min_solution_len",
                "<= max_solution_len",
                format!("{} > {}", self.min_solution_len, self.max_solution_len),
            );
        }
        Ok(())
    }
}
