//! MineSweeper's [`EnvSpec`].

use crate::env::{Env, EnvError};
use crate::spec::{AnswerFormat, EnvSpec};

pub static SPEC: EnvSpec = EnvSpec {
    name: "minesweeper",
    make,
    answer: AnswerFormat::ActionLine,
    seats: None,
    held_out: None,
    expert: None,
    prompts: &[],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    Ok(Box::new(super::MineSweeperEnv::from_table(table)?))
}
