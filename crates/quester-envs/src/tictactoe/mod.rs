//! Tic-Tac-Toe against fixed opponents (MAGE): MCTS, "preferred cell order" bots, a random
//! player. See `docs/envs/tictactoe.md`.

mod board;
mod config;
mod env;
pub mod expert;
mod mcts;
mod opponents;
mod spec;

pub use board::{Board, Mark, Outcome, LINES};
pub use config::{AgentFirst, TicTacToeConfig};
pub use env::{TicTacToeEnv, REWARD_DRAW, REWARD_LOSS, REWARD_WIN};
pub use mcts::Mcts;
pub use opponents::{Opponent, OpponentKind, PREFERRED_ORDERS};
pub use spec::SPEC;
