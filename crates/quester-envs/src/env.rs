//! The environment interface the trainer drives.

use serde::Serialize;

/// Free-form per-step details (e.g. WebShop's reward parts), printed by `quester env run`.
pub type Info = serde_json::Map<String, serde_json::Value>;

/// The outcome of one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The observation after the step (the same text `Env::observation` returns).
    pub observation: String,
    pub reward: f64,
    /// The episode (attempt) is over.
    pub done: bool,
    /// The episode ended in success.
    pub won: bool,
    /// False when no action could be parsed or the action was not allowed. An invalid action
    /// never changes the state beyond what the env's rules say (e.g. a wasted move).
    pub valid: bool,
    pub info: Info,
}

impl Step {
    /// An invalid step that changed nothing: reward 0, `info.outcome` says why.
    pub fn unchanged(observation: String, done: bool, won: bool, outcome: &str) -> Step {
        let mut info = Info::new();
        info.insert("outcome".into(), outcome.into());
        Step {
            observation,
            reward: 0.0,
            done,
            won,
            valid: false,
            info,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("unknown environment `{name}`; available: {available}")]
    UnknownEnv { name: String, available: String },
    #[error("invalid configuration for {env}: {message}")]
    Config { env: String, message: String },
    #[error("{0}")]
    Level(String),
    #[error("{env}: step or restart before the first reset")]
    NotReset { env: String },
    #[error("{env}: could not generate a task from seed {seed}: {message}")]
    Generation {
        env: String,
        seed: u64,
        message: String,
    },
    #[error("{0}")]
    Other(String),
}

/// Converts a config error into an env error naming the env.
pub fn config_error(env: &str, e: quester_config::ConfigError) -> EnvError {
    EnvError::Config {
        env: env.to_string(),
        message: e.to_string(),
    }
}

/// A text environment.
///
/// Contract:
/// - `reset(seed)` starts a new task deterministically from `seed` and returns the first
///   observation. The same seed (and config) always gives the same task.
/// - `restart()` returns to the exact initial state of the current task (including any RNG state
///   of opponents), so every attempt of a LaMer trial sees the same task.
/// - `step(response)` takes the model's whole response text; the env parses the action itself
///   (normally from the last `<action>...</action>`). Malformed or hostile text never panics: it
///   is an invalid action. Stepping after `done` is an invalid step that changes nothing.
pub trait Env: Send {
    /// The registry name (`sokoban`, `minesweeper`, ...).
    fn name(&self) -> &'static str;
    fn reset(&mut self, seed: u64) -> Result<String, EnvError>;
    fn restart(&mut self) -> Result<String, EnvError>;
    fn step(&mut self, response: &str) -> Step;
    /// The current observation text (board, page, ...), without any history.
    fn observation(&self) -> String;
    /// The anchor observation for GiGPO step groups: the raw state without history. Defaults to
    /// the observation.
    fn anchor(&self) -> String {
        self.observation()
    }
    /// The rules block used in prompts (symbols, action format).
    fn rules(&self) -> String;
    /// The admissible actions, where the set is finite and small enough to list.
    fn admissible_actions(&self) -> Option<Vec<String>> {
        None
    }
    /// Turns per attempt.
    fn max_turns(&self) -> usize;
    /// Task-level facts (e.g. the opponent's id) used in grouping keys and logs.
    fn task_info(&self) -> Info {
        Info::new()
    }
    /// Hidden facts about the attempt just played (e.g. the opponent's card) that a
    /// training-time reflection prompt may reveal, as MAGE's does. Never shown at evaluation.
    /// `None` when the env has nothing hidden.
    fn privileged_info(&self) -> Option<String> {
        None
    }
    /// How an earlier observation appears in the history of a later prompt. LaMer shortens long
    /// pages there (WebShop: at most `max_items` strings); the current observation is always
    /// shown whole. Defaults to the observation unchanged.
    fn history_observation(&self, observation: &str) -> String {
        observation.to_string()
    }
    /// What the attempt played so far achieved, as a key: two attempts with equal keys reached
    /// the same outcome (SGE's exploration measure counts distinct keys per task). Coding: the
    /// set of asserts passed. Defaults to the anchor of the current state (the final board).
    fn outcome(&self) -> String {
        self.anchor()
    }
    /// Whether the current episode is over.
    fn is_done(&self) -> bool;
    /// The expert's answer in the current state: the text an `<action>` tag would hold (the
    /// whole answer for envs whose answer is the whole response). Draws, where the expert
    /// randomises (ties, mixed strategies), come from `rng` only. `None`: the env has no expert
    /// (its spec's `expert` is `None`).
    fn expert_action(&mut self, rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        let _ = rng;
        None
    }
}
