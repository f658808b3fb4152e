//! Text environments for training language agents.
//!
//! Every environment implements [`Env`]: it is reset from a seed, stepped with the model's raw
//! response text (the action is parsed out of it, see [`action`]), and can be restarted to the
//! initial state of its current task (LaMer replays the same task in every attempt of a trial).
//! Nothing here depends on an ML library, so this crate builds and tests in seconds.
//!
//! What the trainer and the CLI know about an env (how an answer is written, seats, the held-out
//! rule, prompt templates) is its [`EnvSpec`], listed once in [`registry`]; [`check_env`] runs
//! the env contract on a spec.

pub mod action;
pub mod bandit;
pub mod check;
pub mod coding;
pub mod env;
pub mod episode;
pub mod expert;
pub mod instruction;
pub mod kuhn;
pub mod minesweeper;
pub mod registry;
pub mod scienceworld;
pub mod sokoban;
pub mod spec;
pub mod tictactoe;
pub mod trial_memory;
pub mod webshop;

pub use check::{check_env, check_env_with, CheckError};
pub use env::{config_error, Env, EnvError, Info, Step};
pub use episode::{Episode, Outcome};
pub use expert::{noisy_expert_action, ExpertMove};
pub use registry::{env_names, make_env, prompt, spec, specs};
pub use spec::{AnswerFormat, EnvSpec, HeldOutError, SeatValue, Seats};
