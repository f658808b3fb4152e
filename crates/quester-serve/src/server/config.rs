//! Configuration of the `serve` HTTP server.

use serde::{Deserialize, Serialize};

/// Limits and defaults of the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// Threads reading HTTP requests (each blocks while its request is generated).
    pub http_threads: usize,
    /// Most sequences generated in one batch.
    pub max_batch: usize,
    /// How long the first request of a batch waits for company, milliseconds.
    pub batch_window_ms: u64,
    /// `max_tokens` when the request gives none.
    pub default_max_tokens: usize,
    /// Largest `max_tokens` accepted.
    pub max_tokens_limit: usize,
    /// Largest request body accepted, bytes.
    pub max_body_bytes: usize,
    /// Seed of the sequence of seeds given to requests that bring none.
    pub seed: u64,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            http_threads: 8,
            max_batch: 16,
            batch_window_ms: 5,
            default_max_tokens: 256,
            max_tokens_limit: 8192,
            max_body_bytes: 8 << 20,
            seed: 0,
        }
    }
}
