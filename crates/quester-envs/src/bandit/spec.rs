//! The meta-bandit's [`EnvSpec`].

use crate::env::{Env, EnvError};
use crate::spec::{AnswerFormat, EnvSpec};

pub static SPEC: EnvSpec = EnvSpec {
    name: "bandit",
    make,
    answer: AnswerFormat::ActionLine,
    seats: None,
    held_out: None,
    expert: Some("scouts in the first attempt, then pulls the arm the scout showed"),
    prompts: &[
        ("bandit_play", include_str!("prompts/play.txt")),
        ("bandit_reflect", include_str!("prompts/reflect.txt")),
    ],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    Ok(Box::new(super::BanditEnv::from_table(table)?))
}
