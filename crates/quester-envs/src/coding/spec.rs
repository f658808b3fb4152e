//! Python coding's [`EnvSpec`].

use crate::env::{Env, EnvError};
use crate::spec::{train_and_eval_splits, AnswerFormat, EnvSpec, HeldOutError};

pub static SPEC: EnvSpec = EnvSpec {
    name: "coding",
    make,
    answer: AnswerFormat::FreeTextInTag,
    seats: None,
    held_out: Some(held_out),
    expert: Some(
        "the canonical solution (train split only; refused on the test and HumanEval splits)",
    ),
    prompts: &[("coding_play", include_str!("prompts/play.txt"))],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    Ok(Box::new(super::CodingEnv::from_table(table)?))
}

/// Seeds index problems of a split, so evaluation must use a split training never draws from.
fn held_out(train: &toml::Table, eval: &toml::Table) -> Result<(), HeldOutError> {
    let (train, eval) = train_and_eval_splits(train, eval);
    if train != "train" || eval == "train" {
        return Err(HeldOutError {
            key: "eval.env_settings.split",
            message: format!(
                "the coding env trains on split \"{train}\" and evaluates on \"{eval}\"; \
                 held-out evaluation needs env.settings.split = \"train\" and \
                 eval.env_settings.split = \"test\" or \"humaneval\""
            ),
        });
    }
    Ok(())
}
