//! Kuhn Poker's [`EnvSpec`].

use crate::env::{Env, EnvError};
use crate::spec::{AnswerFormat, EnvSpec, SeatValue, Seats};

pub static SPEC: EnvSpec = EnvSpec {
    name: "kuhn",
    make,
    answer: AnswerFormat::ActionLine,
    seats: Some(Seats {
        key: "agent_position",
        value: SeatValue::Text {
            first: "first",
            second: "second",
        },
    }),
    held_out: None,
    expert: Some("the CFR+ equilibrium strategy at the agent's information set, sampled"),
    prompts: &[
        ("kuhn_terse_play", include_str!("prompts/terse_play.txt")),
        (
            "kuhn_terse_reflect",
            include_str!("prompts/terse_reflect.txt"),
        ),
    ],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    Ok(Box::new(super::KuhnEnv::from_table(table)?))
}
