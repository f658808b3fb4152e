//! One episode's bookkeeping and what is reported after each reset and step: shared by the
//! OpenEnv server (quester-envserve) and the Python package (quester-py), so that a client sees
//! the same fields whichever way it reaches an env.

use crate::env::{Env, Info, Step};
use serde_json::{json, Map, Value};

/// The episode in play.
#[derive(Debug, Clone)]
pub struct Episode {
    pub id: String,
    pub seed: u64,
    pub steps: u64,
    pub done: bool,
    pub won: bool,
    pub total_reward: f64,
}

/// What a step reports besides text, reward and done.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub won: bool,
    pub valid: bool,
    pub info: Info,
}

impl Episode {
    /// An episode just reset from `seed`; without an id it gets a random one.
    pub fn start(env: &dyn Env, seed: u64, id: Option<String>) -> Episode {
        Episode {
            id: id.unwrap_or_else(new_episode_id),
            seed,
            steps: 0,
            done: env.is_done(),
            won: false,
            total_reward: 0.0,
        }
    }

    /// Counts `step` and returns its outcome for `metadata`.
    pub fn record(&mut self, step: Step) -> Outcome {
        self.steps += 1;
        self.done = step.done;
        self.won = step.won;
        self.total_reward += step.reward;
        Outcome {
            won: step.won,
            valid: step.valid,
            info: step.info,
        }
    }

    /// The observation metadata: `env`, `episode_id`, `seed`, `step_count`; after a step also
    /// `won`, `valid`, `info`; once done `outcome` (the env's key for what the attempt achieved).
    pub fn metadata(&self, env: &dyn Env, outcome: Option<Outcome>) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert("env".into(), env.name().into());
        meta.insert("episode_id".into(), self.id.clone().into());
        meta.insert("seed".into(), self.seed.into());
        meta.insert("step_count".into(), self.steps.into());
        if let Some(o) = outcome {
            meta.insert("won".into(), o.won.into());
            meta.insert("valid".into(), o.valid.into());
            meta.insert("info".into(), Value::Object(o.info));
        }
        if self.done {
            meta.insert("outcome".into(), env.outcome().into());
        }
        meta
    }
}

/// The admissible actions where the env lists them (the text inside the `<action>` tag); none
/// once the episode is over.
pub fn valid_actions(env: &dyn Env, done: bool) -> Option<Vec<String>> {
    if done {
        None
    } else {
        env.admissible_actions()
    }
}

/// OpenEnv's `State` (`episode_id`, `step_count`) plus what a trainer may log: `env`,
/// `max_turns`, and once an episode started `seed`, `done`, `won`, `total_reward`.
pub fn state(env: &dyn Env, episode: Option<&Episode>) -> Value {
    let mut state = json!({
        "episode_id": Value::Null,
        "step_count": 0,
        "env": env.name(),
        "max_turns": env.max_turns(),
    });
    if let Some(e) = episode {
        state["episode_id"] = e.id.clone().into();
        state["step_count"] = e.steps.into();
        state["seed"] = e.seed.into();
        state["done"] = e.done.into();
        state["won"] = e.won.into();
        state["total_reward"] = e.total_reward.into();
    }
    state
}

/// A random episode id (128 bits, 32 lowercase hex digits). Written by hand: `format!`'s
/// padding machinery was a visible part of a MineSweeper reset from Python.
pub fn new_episode_id() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let n = rand::random::<u128>();
    (0..32)
        .rev()
        .map(|i| char::from(HEX[((n >> (4 * i)) & 0xf) as usize]))
        .collect()
}

/// A JSON value as a TOML one (env settings are TOML tables); `None` where it holds a null,
/// which TOML lacks.
pub fn json_to_toml(value: Value) -> Option<toml::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        Value::String(s) => toml::Value::String(s),
        Value::Array(items) => {
            toml::Value::Array(items.into_iter().map(json_to_toml).collect::<Option<_>>()?)
        }
        Value::Object(m) => toml::Value::Table(
            m.into_iter()
                .map(|(k, v)| Some((k, json_to_toml(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_grows_with_the_episode() {
        let mut env = crate::make_env("tictactoe", toml::Table::new()).unwrap();
        env.reset(4).unwrap();
        let mut episode = Episode::start(env.as_ref(), 4, Some("e".into()));
        let keys = |m: &Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
        let meta = episode.metadata(env.as_ref(), None);
        assert_eq!(keys(&meta), ["env", "episode_id", "seed", "step_count"]);
        assert_eq!(
            (meta["env"].as_str(), meta["seed"].as_u64()),
            (Some("tictactoe"), Some(4))
        );
        while !episode.done {
            let action = valid_actions(env.as_ref(), false).unwrap().remove(0);
            let outcome = episode.record(env.step(&format!("<action>{action}</action>")));
            let meta = episode.metadata(env.as_ref(), Some(outcome));
            assert!(meta.contains_key("won") && meta.contains_key("info"));
            assert_eq!(meta.contains_key("outcome"), episode.done);
        }
        assert_eq!(valid_actions(env.as_ref(), true), None);
        let state = state(env.as_ref(), Some(&episode));
        assert_eq!(state["step_count"], episode.steps);
        assert_eq!(state["done"], true);
    }

    #[test]
    fn episode_ids_are_32_lowercase_hex_digits() {
        let a = new_episode_id();
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_ne!(a, new_episode_id());
    }

    #[test]
    fn json_settings_become_toml_and_null_is_refused() {
        let v = json_to_toml(serde_json::json!({"a": 1, "b": [1.5, "x"], "c": {"d": true}}));
        let toml::Value::Table(t) = v.unwrap() else {
            panic!("not a table")
        };
        assert_eq!(t["a"].as_integer(), Some(1));
        assert_eq!(t["b"][0].as_float(), Some(1.5));
        assert_eq!(json_to_toml(serde_json::json!({"a": [null]})), None);
    }
}
