//! Building environments by name from TOML config tables.

use crate::env::{Env, EnvError};

/// Every environment name the registry knows.
pub const ENV_NAMES: &[&str] = &["webshop"];

/// Builds the environment `name` from a config table (keys of that env's config struct; unknown
/// keys are an error that lists the valid ones).
pub fn make_env(name: &str, config: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    match name {
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
