//! What `serve` asks of a model: continuous generation of chat completions, driven step by
//! step by the server (requests join and leave the running batch between token steps).

use std::sync::Arc;

use crate::openai::protocol::{FinishReason, TokenLogprob, WireMessage};

/// One sequence to generate, with validated sampling parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationRequest {
    /// The conversation, to be rendered with the model's chat template (generation prompt on).
    pub messages: Vec<WireMessage>,
    /// The prompt as token ids, used as is (`/v1/completions`); when set, `messages` is empty.
    pub prompt_ids: Option<Vec<u32>>,
    /// Temperature; 0 is greedy.
    pub temperature: f64,
    /// Nucleus mass in (0, 1]; 1 disables it.
    pub top_p: f64,
    /// Top-k; 0 disables it.
    pub top_k: usize,
    /// Most new tokens.
    pub max_tokens: usize,
    /// Stop strings (the text returned ends before the first one, or after it with
    /// `include_stop`).
    pub stop: Vec<String>,
    /// Keep the stop string that ended the text in it.
    pub include_stop: bool,
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
    /// The generated token ids, a stop string's tokens included (the text is cut, the tokens
    /// are what was sampled).
    pub token_ids: Vec<u32>,
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

/// Tokens a running sequence added in one step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The new token ids (decoded by the backend's [`ChatCodec`] for streaming).
    pub token_ids: Vec<u32>,
    /// Their log-probs (empty unless the request asked for them).
    pub logprobs: Vec<TokenLogprob>,
}

/// What one step of [`ChatBackend::generate_continuous`] reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BackendStep {
    /// Sequences that ended, each with its output or why it failed (one bad sequence does not
    /// fail the others).
    pub finished: Vec<(u64, Result<GenerationOutput, BackendError>)>,
    /// Tokens that sequences still running added (backends that decode token by token).
    pub progress: Vec<(u64, Progress)>,
}

/// What the server asks for after a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BackendOrders {
    /// Sequences to add under new keys: they join the running batch at the next step.
    pub submit: Vec<(u64, GenerationRequest)>,
    /// Live sequences to drop (their clients went away); they are not reported again.
    pub cancel: Vec<u64>,
}

/// A backend's prompt rendering and detokenizer, used on the HTTP threads while the backend
/// generates: a conversation is checked before it is queued (HTTP 400 at once), and streamed
/// tokens are decoded there.
pub trait ChatCodec: Send + Sync {
    /// Tokens of the rendered prompt, or why the conversation cannot be rendered.
    fn prompt_tokens(&self, messages: &[WireMessage]) -> Result<usize, BackendError>;

    /// Why a token-id prompt cannot be generated from (empty, an id outside the vocabulary).
    fn check_prompt_ids(&self, ids: &[u32]) -> Result<(), BackendError>;

    /// The text of generated token ids, as the final output decodes them.
    fn decode(&self, ids: &[u32]) -> Result<String, BackendError>;
}

/// A model that `serve` can expose. It lives on one dedicated thread (built there by
/// [`super::serve_from`], or moved there by [`super::serve_backend`]), so it need not be `Sync`.
pub trait ChatBackend {
    /// The id reported by `GET /v1/models` and in every response.
    fn model_id(&self) -> String;

    /// Generates `first` (sequences under the server's keys), reporting after every step
    /// (every token step for a backend that schedules per token; after each batch for one that
    /// does not) to `on_step`, whose answer adds and drops sequences. Returns once nothing is
    /// left. An error fails every sequence still live.
    fn generate_continuous(
        &mut self,
        first: Vec<(u64, GenerationRequest)>,
        on_step: &mut dyn FnMut(BackendStep) -> BackendOrders,
    ) -> Result<(), BackendError>;

    /// Replaces the LoRA adapter with the PEFT adapter in `dir` (None: the base model). Called
    /// between batches, never while sequences run.
    fn set_adapter(&mut self, _dir: Option<&std::path::Path>) -> Result<(), BackendError> {
        Err(BackendError::invalid(
            "this backend cannot load LoRA adapters",
        ))
    }

    /// The prompt renderer and detokenizer (None: conversations are checked when generated, and
    /// a streamed choice arrives as one delta when it ends).
    fn codec(&self) -> Option<Arc<dyn ChatCodec>> {
        None
    }
}
