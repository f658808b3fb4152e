//! One client's environment and episode bookkeeping. Synchronous: the async side runs these
//! calls on a blocking thread.

use crate::error::RequestError;
use crate::observation::observation_payload;
use crate::served::{EnvTemplate, ServedEnv};
use crate::wire::ResetParams;
use quester_envs::episode::{self, Episode};
use quester_envs::EnvError;
use serde_json::Value;

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
        let episode = Episode::start(self.env.env(), seed, params.episode_id);
        let payload = observation_payload(
            self.env.env(),
            &text,
            None,
            &episode,
            None,
            self.env.trial_meta(),
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
        let (text, reward) = (step.observation.clone(), step.reward);
        let outcome = episode.record(step);
        let payload = observation_payload(
            self.env.env(),
            &text,
            Some(reward),
            &episode,
            Some(outcome),
            self.env.trial_meta(),
        );
        self.episode = Some(episode);
        Ok(payload)
    }

    /// OpenEnv's `State`: `episode_id` and `step_count`, plus what a trainer may log (and a
    /// trial's bookkeeping).
    pub fn state(&self) -> Value {
        let mut state = episode::state(self.env.env(), self.episode.as_ref());
        if let (Some(_), Value::Object(m)) = (&self.episode, &mut state) {
            m.extend(self.env.trial_meta());
        }
        state
    }

    /// The env's rules block (how actions are written), for `/metadata`.
    pub fn rules(&self) -> String {
        self.env.env().rules()
    }
}

/// Runs `call` on a fresh session built from `template`, on a blocking thread (a stateless
/// HTTP or MCP call); the outer error when the env panicked.
pub async fn on_fresh_session<F>(
    template: EnvTemplate,
    call: F,
) -> Result<Result<Value, RequestError>, tokio::task::JoinError>
where
    F: FnOnce(&mut Session) -> Result<Value, RequestError> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let mut session =
            Session::new(template).map_err(|e| RequestError::env("building the env", e))?;
        call(&mut session)
    })
    .await
}
