//! One client's environment and episode bookkeeping. Synchronous: the async side runs these
//! calls on a blocking thread.

use crate::error::RequestError;
use crate::observation::{observation_payload, Outcome};
use crate::served::{EnvTemplate, ServedEnv};
use crate::wire::ResetParams;
use quester_envs::EnvError;
use serde_json::{json, Value};

/// The episode in play.
#[derive(Debug)]
struct Episode {
    id: String,
    seed: u64,
    steps: u64,
    done: bool,
    won: bool,
    total_reward: f64,
}

pub struct Session {
    template: EnvTemplate,
    env: ServedEnv,
    /// The per-episode settings the env was built with (empty: the server's own).
    extra: toml::Table,
    episode: Option<Episode>,
}

impl Session {
    pub fn new(template: EnvTemplate) -> Result<Session, EnvError> {
        let env = template.build(&toml::Table::new())?;
        Ok(Session {
            template,
            env,
            extra: toml::Table::new(),
            episode: None,
        })
    }

    /// Starts an episode; the reply is an observation payload.
    pub fn reset(&mut self, params: ResetParams) -> Result<Value, RequestError> {
        if params.settings != self.extra {
            // Rebuilt only when the settings change: some envs are costly to build (a JVM).
            self.env = self.template.build(&params.settings).map_err(|e| match e {
                EnvError::Config { .. } => RequestError::validation(
                    &["data"],
                    "env_settings",
                    format!("invalid env settings: {e}"),
                ),
                other => RequestError::env("building the env with these settings", other),
            })?;
            self.extra = params.settings;
            self.episode = None;
        }
        // Seedless resets draw a seed, as Gymnasium-style envs do; the reply names it.
        let seed = params.seed.unwrap_or_else(rand::random);
        let text = self
            .env
            .env_mut()
            .reset(seed)
            .map_err(|e| RequestError::env(&format!("reset with seed {seed}"), e))?;
        let episode = Episode {
            id: params.episode_id.unwrap_or_else(new_episode_id),
            seed,
            steps: 0,
            done: self.env.env().is_done(),
            won: false,
            total_reward: 0.0,
        };
        let payload = observation_payload(
            self.env.env(),
            &text,
            None,
            episode.done,
            self.episode_meta(&episode),
            None,
        );
        self.episode = Some(episode);
        Ok(payload)
    }

    /// Plays the model's response text.
    pub fn step(&mut self, response: &str) -> Result<Value, RequestError> {
        let Some(mut episode) = self.episode.take() else {
            return Err(RequestError::execution(
                "step before reset: send a reset to start an episode",
            ));
        };
        if episode.done {
            self.episode = Some(episode);
            return Err(RequestError::execution(
                "the episode is over: send a reset to start another",
            ));
        }
        let step = self.env.env_mut().step(response);
        episode.steps += 1;
        episode.done = step.done;
        episode.won = step.won;
        episode.total_reward += step.reward;
        let outcome = Outcome {
            won: step.won,
            valid: step.valid,
            info: step.info,
        };
        let payload = observation_payload(
            self.env.env(),
            &step.observation,
            Some(step.reward),
            step.done,
            self.episode_meta(&episode),
            Some(outcome),
        );
        self.episode = Some(episode);
        Ok(payload)
    }

    /// OpenEnv's `State`: `episode_id` and `step_count`, plus what a trainer may log.
    pub fn state(&self) -> Value {
        let mut state = json!({
            "episode_id": Value::Null,
            "step_count": 0,
            "env": self.env.env().name(),
            "max_turns": self.env.env().max_turns(),
        });
        if let Some(e) = &self.episode {
            state["episode_id"] = e.id.clone().into();
            state["step_count"] = e.steps.into();
            state["seed"] = e.seed.into();
            state["done"] = e.done.into();
            state["won"] = e.won.into();
            state["total_reward"] = e.total_reward.into();
            if let Value::Object(m) = &mut state {
                m.extend(self.env.trial_meta());
            }
        }
        state
    }

    /// The env's rules block (how actions are written), for `/metadata`.
    pub fn rules(&self) -> String {
        self.env.env().rules()
    }

    fn episode_meta(&self, e: &Episode) -> serde_json::Map<String, Value> {
        let mut meta = serde_json::Map::new();
        meta.insert("env".into(), self.env.env().name().into());
        meta.insert("episode_id".into(), e.id.clone().into());
        meta.insert("seed".into(), e.seed.into());
        meta.insert("step_count".into(), e.steps.into());
        meta.extend(self.env.trial_meta());
        meta
    }
}

/// A random episode id (128 bits, hex), for resets that bring none.
fn new_episode_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}
