//! Errors of the OpenAI-compatible client.

/// What went wrong talking to a chat-completions server.
#[derive(Debug, thiserror::Error)]
pub enum OpenAiError {
    /// The server did not answer within `timeout_s` on any attempt.
    #[error(
        "request to {url} timed out after {timeout_s} s (gave up after {attempts} attempt(s))"
    )]
    Timeout {
        /// The endpoint.
        url: String,
        /// The per-request limit.
        timeout_s: f64,
        /// How many requests were sent.
        attempts: u32,
    },
    /// The connection failed (refused, reset, DNS, ...) on every attempt.
    #[error("could not talk to {url}: {message} (gave up after {attempts} attempt(s))")]
    Transport {
        /// The endpoint.
        url: String,
        /// The last transport error.
        message: String,
        /// How many requests were sent.
        attempts: u32,
    },
    /// The server answered with an HTTP error status (4xx at once, 5xx/429 after the retries).
    #[error("{url} answered HTTP {status}: {message} (after {attempts} attempt(s))")]
    Status {
        /// The endpoint.
        url: String,
        /// HTTP status code.
        status: u16,
        /// The server's error message, or the start of its body.
        message: String,
        /// How many requests were sent.
        attempts: u32,
    },
    /// The server answered 200 with a body that is not a valid chat completion.
    #[error("malformed response from {url}: {what}; body starts with: {excerpt:?}")]
    Malformed {
        /// The endpoint.
        url: String,
        /// What was wrong, naming the JSON path.
        what: String,
        /// The first 200 characters of the body.
        excerpt: String,
    },
    /// The client's configuration is unusable.
    #[error("invalid openai client config: {0}")]
    Config(String),
}

/// The first `n` characters of `s` (on a char boundary), for error messages.
pub(crate) fn excerpt(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}
