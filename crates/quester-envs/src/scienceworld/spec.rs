//! ScienceWorld's [`EnvSpec`].

use crate::env::{Env, EnvError};
use crate::spec::{AnswerFormat, EnvSpec};

pub static SPEC: EnvSpec = EnvSpec {
    name: "scienceworld",
    make,
    answer: AnswerFormat::ActionLine,
    seats: None,
    held_out: None,
    expert: Some("the simulator's gold action sequence for the task and variation"),
    prompts: &[(
        "scienceworld_terse_play",
        include_str!("prompts/terse_play.txt"),
    )],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    Ok(Box::new(super::ScienceWorldEnv::from_table(table)?))
}
