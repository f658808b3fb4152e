//! Instruction following's [`EnvSpec`].

use crate::env::{Env, EnvError};
use crate::spec::{train_and_eval_splits, AnswerFormat, EnvSpec, HeldOutError};

pub static SPEC: EnvSpec = EnvSpec {
    name: "instruction",
    make,
    answer: AnswerFormat::WholeResponse,
    seats: None,
    held_out: Some(held_out),
    expert: None,
    prompts: &[("instruction_play", include_str!("prompts/play.txt"))],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    Ok(Box::new(super::InstructionEnv::from_table(table)?))
}

/// Seeds alone do not hold tasks out: the same constraint combination comes back under many
/// seeds, so training must draw from split "train" and evaluation from "test".
fn held_out(train: &toml::Table, eval: &toml::Table) -> Result<(), HeldOutError> {
    let (train, eval) = train_and_eval_splits(train, eval);
    if train != "train" || eval != "test" {
        return Err(HeldOutError {
            key: "eval.env_settings.split",
            message: format!(
                "the instruction env trains on split \"{train}\" and evaluates on \"{eval}\"; \
                 held-out evaluation needs env.settings.split = \"train\" and \
                 eval.env_settings.split = \"test\" (constraint combinations never trained on)"
            ),
        });
    }
    Ok(())
}
