//! MineSweeper as used by LaMer: a small board, a safe first click made by `reset`, left clicks
//! only, shaped rewards. See `docs/envs/minesweeper.md`.

mod board;
mod config;
mod env;
pub mod expert;
mod generate;
mod spec;

pub use board::{Board, Reveal};
pub use config::MineSweeperConfig;
pub use env::{
    MineSweeperEnv, REWARD_CASCADE, REWARD_MINE, REWARD_ONE_CELL, REWARD_UNCHANGED, REWARD_WIN,
};
pub use generate::{generate_board, MAX_GENERATION_DRAWS};
pub use spec::SPEC;
