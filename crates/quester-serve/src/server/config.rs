//! Configuration of the `serve` HTTP server.

use serde::{Deserialize, Serialize};

/// Limits and defaults of the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// Most sequences decoding at once (a request with more choices runs alone); the others
    /// wait in the server's queue and join the batch as rows free up.
    pub max_batch: usize,
    /// Most sequences waiting or decoding; a request that would pass it is answered 429 at once.
    pub max_queue: usize,
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
            max_batch: 16,
            max_queue: 64,
            default_max_tokens: 256,
            max_tokens_limit: 8192,
            max_body_bytes: 8 << 20,
            seed: 0,
        }
    }
}
