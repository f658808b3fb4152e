//! MineSweeper's [`EnvSpec`].

use crate::env::{Env, EnvError};
use crate::spec::{AnswerFormat, EnvSpec};

pub static SPEC: EnvSpec = EnvSpec {
    name: "minesweeper",
    make,
    answer: AnswerFormat::ActionLine,
    seats: None,
    held_out: None,
    expert: Some("a logic solver on the visible board: deduced-safe cells first, else the lowest estimated mine probability"),
    prompts: &[],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    Ok(Box::new(super::MineSweeperEnv::from_table(table)?))
}
