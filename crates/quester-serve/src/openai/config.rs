//! Configuration of the OpenAI-compatible client.

use serde::{Deserialize, Serialize};

use super::OpenAiError;

/// Where and how to reach a chat-completions server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OpenAiConfig {
    /// Base URL up to and including `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Model id sent with every request.
    pub model: String,
    /// Name of an environment variable holding a bearer token (none: no Authorization header).
    pub api_key_env: Option<String>,
    /// Limit for one whole request (connect, send, wait, read), seconds.
    pub timeout_s: f64,
    /// Retries after the first attempt, on connect errors, timeouts, HTTP 5xx and 429.
    pub max_retries: u32,
    /// Wait before the first retry, milliseconds; doubled on each further retry.
    pub backoff_initial_ms: u64,
    /// Longest wait between retries, milliseconds.
    pub backoff_max_ms: u64,
    /// Requests in flight at once in batched calls.
    pub max_concurrency: usize,
    /// Ask the server for per-token log-probs of the sampled tokens.
    pub request_logprobs: bool,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8080/v1".to_string(),
            model: "default".to_string(),
            api_key_env: None,
            timeout_s: 120.0,
            max_retries: 4,
            backoff_initial_ms: 500,
            backoff_max_ms: 10_000,
            max_concurrency: 4,
            request_logprobs: false,
        }
    }
}

impl OpenAiConfig {
    /// Checks the values, naming the key at fault.
    pub fn validate(&self) -> Result<(), OpenAiError> {
        let bad = |key: &str, why: &str| Err(OpenAiError::Config(format!("{key}: {why}")));
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return bad(
                "base_url",
                &format!(
                    "must start with http:// or https://, got {:?}",
                    self.base_url
                ),
            );
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return bad(
                "timeout_s",
                &format!("must be a positive number, got {}", self.timeout_s),
            );
        }
        if self.max_concurrency == 0 {
            return bad("max_concurrency", "must be at least 1");
        }
        if self.backoff_max_ms < self.backoff_initial_ms {
            return bad(
                "backoff_max_ms",
                &format!(
                    "must be >= backoff_initial_ms ({}), got {}",
                    self.backoff_initial_ms, self.backoff_max_ms
                ),
            );
        }
        Ok(())
    }

    /// The wait before retry number `retry` (0-based): `initial * 2^retry`, capped.
    pub fn backoff_ms(&self, retry: u32) -> u64 {
        let factor = 1u64.checked_shl(retry.min(63)).unwrap_or(u64::MAX);
        self.backoff_initial_ms
            .saturating_mul(factor)
            .min(self.backoff_max_ms)
    }
}
