//! The observation payload OpenEnv's clients parse: `{observation, reward, done, metadata}`,
//! where `observation` holds the env's fields and its own copy of `metadata` (OpenEnv's
//! serializer leaves `metadata` in the observation as well as lifting it out). The metadata
//! itself is quester-envs' `Episode::metadata`, which the Python package reports too.

use quester_envs::episode::{valid_actions, Episode, Outcome};
use quester_envs::Env;
use serde_json::{json, Map, Value};

/// Builds the payload. `reward` is `None` at reset (OpenEnv's convention); `outcome` is the
/// step's, none at reset; `extra` joins the metadata (a trial's bookkeeping).
pub fn observation_payload(
    env: &dyn Env,
    text: &str,
    reward: Option<f64>,
    episode: &Episode,
    outcome: Option<Outcome>,
    extra: Map<String, Value>,
) -> Value {
    let mut meta = episode.metadata(env, outcome);
    meta.extend(extra);
    let meta = Value::Object(meta);
    json!({
        "observation": {
            "text": text,
            "valid_actions": valid_actions(env, episode.done),
            "metadata": meta,
        },
        "reward": reward,
        "done": episode.done,
        "metadata": meta,
    })
}
