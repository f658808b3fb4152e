//! What `serve` asks of a model: generate a batch of chat completions.

use crate::openai::protocol::{FinishReason, TokenLogprob, WireMessage};

/// One sequence to generate, with validated sampling parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationRequest {
    /// The conversation, to be rendered with the model's chat template (generation prompt on).
    pub messages: Vec<WireMessage>,
    /// Temperature; 0 is greedy.
    pub temperature: f64,
    /// Nucleus mass in (0, 1]; 1 disables it.
    pub top_p: f64,
    /// Top-k; 0 disables it.
    pub top_k: usize,
    /// Most new tokens.
    pub max_tokens: usize,
    /// Stop strings (the text returned ends before the first one).
    pub stop: Vec<String>,
    /// Seed of this sequence's sampler.
    pub seed: u64,
    /// Whether per-token log-probs are wanted.
    pub logprobs: bool,
}

/// One generated sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationOutput {
    /// The generated text, stop string excluded.
    pub text: String,
    /// Why it ended.
    pub finish_reason: FinishReason,
    /// Tokens in the rendered prompt.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub completion_tokens: usize,
    /// Per-token sampling log-probs (empty unless requested).
    pub logprobs: Vec<TokenLogprob>,
}

/// Why one sequence could not be generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendError {
    /// The request itself is at fault (e.g. the chat template rejects the conversation):
    /// HTTP 400 rather than 500.
    pub invalid_request: bool,
    /// Explanation.
    pub message: String,
}

impl BackendError {
    /// A fault of the request (HTTP 400).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            invalid_request: true,
            message: message.into(),
        }
    }

    /// A fault of the server or model (HTTP 500).
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            invalid_request: false,
            message: message.into(),
        }
    }
}

/// A model that `serve` can expose. It lives on one dedicated thread (built there by
/// [`super::serve_from`], or moved there by [`super::serve_backend`]), so it need not be `Sync`.
pub trait ChatBackend {
    /// The id reported by `GET /v1/models` and in every response.
    fn model_id(&self) -> String;

    /// Generates every request of `batch` (requests that arrived together): one result per
    /// request, in order, so one bad conversation does not fail its batch-mates.
    fn generate(
        &mut self,
        batch: &[GenerationRequest],
    ) -> Vec<Result<GenerationOutput, BackendError>>;
}
