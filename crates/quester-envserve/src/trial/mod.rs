//! LaMer's trial served as one episode: up to `attempts` attempts at the same task (the env's
//! `restart` between them), an optional reflection turn between attempts, and the earlier
//! attempts remembered in every later observation, as quester's trainer builds its prompts.

mod env;
mod memory;
mod options;

pub use env::{Phase, TrialEnv};
pub use options::{MemoryKind, TrialOptionError, TrialOptions};
