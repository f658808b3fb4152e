//! Text environments for training language agents.
//!
//! Every environment implements [`Env`]: it is reset from a seed, stepped with the model's raw
//! response text (the action is parsed out of it, see [`action`]), and can be restarted to the
//! initial state of its current task (LaMer replays the same task in every attempt of a trial).
//! Nothing here depends on an ML library, so this crate builds and tests in seconds.

pub mod action;
pub mod bandit;
pub mod coding;
pub mod env;
pub mod instruction;
pub mod kuhn;
pub mod minesweeper;
pub mod registry;
pub mod scienceworld;
pub mod sokoban;
pub mod tictactoe;
pub mod webshop;

pub use env::{Env, EnvError, Info, Step};
pub use registry::{make_env, ENV_NAMES, FREE_TEXT_ENVS, WHOLE_RESPONSE_ENVS};
