//! WebShop's [`EnvSpec`].

use crate::env::{config_error, Env, EnvError};
use crate::spec::{train_and_eval_splits, AnswerFormat, EnvSpec, HeldOutError};

pub static SPEC: EnvSpec = EnvSpec {
    name: "webshop",
    make,
    answer: AnswerFormat::ActionLine,
    seats: None,
    held_out: Some(held_out),
    expert: Some(
        "scripted shopper: searches the instruction, opens the goal's product (else the listed one \
         scoring best), clicks the goal's options, buys",
    ),
    prompts: &[],
};

fn make(table: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    let config = quester_config::from_table(table).map_err(|e| config_error("webshop", e))?;
    Ok(Box::new(super::WebShopEnv::new(config)?))
}

/// Seeds index goals of a split, so evaluation must draw from a split without training goals
/// (or name a fixed `goal`).
fn held_out(train: &toml::Table, eval_table: &toml::Table) -> Result<(), HeldOutError> {
    let (train, eval) = train_and_eval_splits(train, eval_table);
    if !eval_table.contains_key("goal") && (eval == train || eval == "all") {
        return Err(HeldOutError {
            key: "eval.env_settings.split",
            message: format!(
                "WebShop evaluation draws from split \"{eval}\", which holds training goals \
                 (training: \"{train}\"); set eval.env_settings.split = \"test\" (goals[0:500])"
            ),
        });
    }
    Ok(())
}
