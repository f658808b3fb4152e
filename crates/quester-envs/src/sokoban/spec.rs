//! Sokoban's [`EnvSpec`].

use crate::env::{config_error, Env, EnvError};
use crate::spec::{AnswerFormat, EnvSpec};

pub static SPEC: EnvSpec = EnvSpec {
    name: "sokoban",
    make,
    answer: AnswerFormat::ActionLine,
    seats: None,
    held_out: None,
    expert: Some("the move-optimal solver's plan from the current room, up to max_moves_per_turn moves a turn"),
    prompts: &[
        ("sokoban_terse_play", include_str!("prompts/terse_play.txt")),
        (
            "sokoban_terse_reflect",
            include_str!("prompts/terse_reflect.txt"),
        ),
    ],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    let config = quester_config::from_table(table).map_err(|e| config_error("sokoban", e))?;
    Ok(Box::new(super::Sokoban::new(config)?))
}
