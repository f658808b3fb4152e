//! Building environments by name from TOML config tables.

use crate::env::{Env, EnvError};

/// Every environment name the registry knows.
pub const ENV_NAMES: &[&str] = &[
    "sokoban",
    "minesweeper",
    "webshop",
    "tictactoe",
    "kuhn",
    "bandit",
    "instruction",
    "coding",
    "scienceworld",
];

/// Envs whose answers are free text over several lines (a human front end collects typed lines
/// as one answer). Those in [`WHOLE_RESPONSE_ENVS`] score the whole response; the others read it
/// from an `<action>` tag, which the front end adds around typed text that has none.
pub const FREE_TEXT_ENVS: &[&str] = &["instruction", "coding"];

/// Envs whose answer is the whole response, with no `<action>` tag: a front end passes typed
/// text through unchanged.
pub const WHOLE_RESPONSE_ENVS: &[&str] = &["instruction"];

/// Builds the environment `name` from a config table (keys of that env's config struct; unknown
/// keys are an error that lists the valid ones).
pub fn make_env(name: &str, config: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    match name {
        "sokoban" => Ok(Box::new(crate::sokoban::Sokoban::new(
            quester_config::from_table(config).map_err(|e| config_error(name, e))?,
        )?)),
        "minesweeper" => Ok(Box::new(crate::minesweeper::MineSweeperEnv::from_table(
            config,
        )?)),
        "tictactoe" => Ok(Box::new(crate::tictactoe::TicTacToeEnv::from_table(
            config,
        )?)),
        "kuhn" => Ok(Box::new(crate::kuhn::KuhnEnv::from_table(config)?)),
        "bandit" => Ok(Box::new(crate::bandit::BanditEnv::from_table(config)?)),
        "instruction" => Ok(Box::new(crate::instruction::InstructionEnv::from_table(
            config,
        )?)),
        "coding" => Ok(Box::new(crate::coding::CodingEnv::from_table(config)?)),
        "scienceworld" => Ok(Box::new(crate::scienceworld::ScienceWorldEnv::from_table(
            config,
        )?)),
        "webshop" => {
            let cfg = quester_config::from_table(config).map_err(|e| config_error(name, e))?;
            Ok(Box::new(crate::webshop::WebShopEnv::new(cfg)?))
        }
        _ => Err(EnvError::UnknownEnv {
            name: name.to_string(),
            available: ENV_NAMES.join(", "),
        }),
    }
}

/// Converts a config error into an env error naming the env.
pub fn config_error(env: &str, e: quester_config::ConfigError) -> EnvError {
    EnvError::Config {
        env: env.to_string(),
        message: e.to_string(),
    }
}
