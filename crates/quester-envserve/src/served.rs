//! The env a session plays: the registry's env as it is, or wrapped as a LaMer trial.

use crate::trial::{TrialEnv, TrialOptions};
use quester_envs::{Env, EnvError};
use serde_json::{Map, Value};

/// How to build the served env: its registry name, the server's settings and, for
/// `--trial`, the trial's shape.
#[derive(Debug, Clone)]
pub struct EnvTemplate {
    pub name: String,
    pub settings: toml::Table,
    pub trial: Option<TrialOptions>,
}

impl EnvTemplate {
    /// Builds the env with `extra` settings on top of the server's.
    pub fn build(&self, extra: &toml::Table) -> Result<ServedEnv, EnvError> {
        let mut table = self.settings.clone();
        table.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        let env = quester_envs::make_env(&self.name, table)?;
        Ok(match self.trial {
            Some(options) => ServedEnv::Trial(Box::new(TrialEnv::new(env, options))),
            None => ServedEnv::Plain(env),
        })
    }
}

/// Kept apart from `Box<dyn Env>` so the session can ask a trial for its bookkeeping.
pub enum ServedEnv {
    Plain(Box<dyn Env>),
    Trial(Box<TrialEnv>),
}

impl ServedEnv {
    pub fn env(&self) -> &dyn Env {
        match self {
            ServedEnv::Plain(e) => e.as_ref(),
            ServedEnv::Trial(t) => t.as_ref(),
        }
    }

    pub fn env_mut(&mut self) -> &mut dyn Env {
        match self {
            ServedEnv::Plain(e) => e.as_mut(),
            ServedEnv::Trial(t) => t.as_mut(),
        }
    }

    /// The trial's phase, attempt and rewards (nothing for a plain env).
    pub fn trial_meta(&self) -> Map<String, Value> {
        match self {
            ServedEnv::Plain(_) => Map::new(),
            ServedEnv::Trial(t) => t.meta(),
        }
    }
}
