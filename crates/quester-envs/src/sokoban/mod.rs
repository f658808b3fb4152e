//! Sokoban (gym-sokoban rules and generator, LaMer's text format and turn structure).
//!
//! - [`grid`]: the board, moves, rendering, level parsing ([`parse_level`]).
//! - [`generate`]: reverse-play room generation seeded from the reset seed.
//! - [`solver`]: the move-optimal solver ([`solve`]), also the deadlock check.
//! - [`expert`]: the solver-driven expert behind `Env::expert_action`.
//! - [`env`]: the [`Sokoban`] environment. See docs/envs/sokoban.md.

pub mod action;
pub mod config;
pub mod env;
pub mod expert;
pub mod generate;
pub mod grid;
pub mod solver;
mod spec;

pub use config::SokobanConfig;
pub use env::Sokoban;
pub use generate::{generate, Generated};
pub use grid::{parse_level, Dir, MoveOutcome, Room};
pub use solver::{solution_len, solve, solve_with_limit, SolveError};
pub use spec::SPEC;
