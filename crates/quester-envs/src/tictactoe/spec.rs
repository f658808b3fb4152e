//! Tic-Tac-Toe's [`EnvSpec`].

use crate::env::{Env, EnvError};
use crate::spec::{AnswerFormat, EnvSpec, SeatValue, Seats};

pub static SPEC: EnvSpec = EnvSpec {
    name: "tictactoe",
    make,
    answer: AnswerFormat::ActionLine,
    seats: Some(Seats {
        key: "agent_first",
        value: SeatValue::AgentFirst,
    }),
    held_out: None,
    expert: Some(
        "perfect play (memoised minimax; fastest win, slowest loss; ties drawn at random)",
    ),
    prompts: &[
        (
            "tictactoe_terse_play",
            include_str!("prompts/terse_play.txt"),
        ),
        (
            "tictactoe_terse_reflect",
            include_str!("prompts/terse_reflect.txt"),
        ),
    ],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    Ok(Box::new(super::TicTacToeEnv::from_table(table)?))
}
