//! What `quester env serve` is asked to serve, and how.

use crate::served::EnvTemplate;
use std::time::Duration;

/// OpenEnv's server modes: simulation has the stateless HTTP `/reset`, `/step`, `/state` (for
/// tests and demos); production leaves them out, so episodes go only through `/ws`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Simulation,
    Production,
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub env: EnvTemplate,
    /// Live sessions at most (WebSocket and HTTP MCP ones together); one more is refused.
    pub max_sessions: usize,
    /// Longest client message (bytes) that is read; a longer one gets an error reply.
    pub max_message_bytes: usize,
    pub mode: Mode,
    /// A session that sends nothing for this long is closed and its slot freed (OpenEnv's
    /// `session_timeout`); `None`: never.
    pub idle_timeout: Option<Duration>,
}

impl ServerConfig {
    pub fn new(env: &str, settings: toml::Table) -> ServerConfig {
        ServerConfig {
            env: EnvTemplate {
                name: env.to_string(),
                settings,
                trial: None,
            },
            max_sessions: 64,
            max_message_bytes: 1 << 20,
            mode: Mode::Simulation,
            idle_timeout: None,
        }
    }
}
