//! The observation payload OpenEnv's clients parse: `{observation, reward, done, metadata}`,
//! where `observation` holds the env's fields and its own copy of `metadata` (OpenEnv's
//! serializer leaves `metadata` in the observation as well as lifting it out).

use quester_envs::{Env, Info};
use serde_json::{json, Map, Value};

/// What a step reports besides text, reward and done.
pub struct Outcome {
    pub won: bool,
    pub valid: bool,
    pub info: Info,
}

/// Builds the payload. `reward` is `None` at reset (OpenEnv's convention); `meta` holds the
/// episode's bookkeeping, to which the step's outcome is added.
pub fn observation_payload(
    env: &dyn Env,
    text: &str,
    reward: Option<f64>,
    done: bool,
    mut meta: Map<String, Value>,
    outcome: Option<Outcome>,
) -> Value {
    if let Some(o) = outcome {
        meta.insert("won".into(), o.won.into());
        meta.insert("valid".into(), o.valid.into());
        meta.insert("info".into(), Value::Object(o.info));
    }
    if done {
        // The env's key for what the attempt achieved (equal keys: equal outcomes).
        meta.insert("outcome".into(), env.outcome().into());
    }
    let valid_actions = if done { None } else { env.admissible_actions() };
    let meta = Value::Object(meta);
    json!({
        "observation": {
            "text": text,
            "valid_actions": valid_actions,
            "metadata": meta,
        },
        "reward": reward,
        "done": done,
        "metadata": meta,
    })
}
