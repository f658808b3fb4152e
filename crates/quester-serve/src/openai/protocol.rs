//! The wire format of `POST /v1/chat/completions`, `POST /v1/completions` (token-id prompts)
//! and `GET /v1/models`, shared by the client and by `serve`. Only the fields quester uses are modelled; unknown fields in requests and responses
//! are ignored, as OpenAI-compatible servers and clients do.

use serde::{Deserialize, Serialize};

/// One chat message (`role` is `system`, `user` or `assistant`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireMessage {
    /// Who speaks.
    pub role: String,
    /// What is said.
    pub content: String,
}

impl WireMessage {
    /// A message from `role` saying `content`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// `stop` is a single string or a list of strings in the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum StopSpec {
    /// One stop string.
    One(String),
    /// Several stop strings.
    Many(Vec<String>),
}

/// The body of a chat-completions request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChatCompletionRequest {
    /// Model id (servers that host one model usually ignore it).
    #[serde(default)]
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<WireMessage>,
    /// Sampling temperature; 0 means greedy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling (not in OpenAI's API; llama.cpp, vLLM and Ollama accept it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// Most new tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<i64>,
    /// Stop strings (not included in the returned text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopSpec>,
    /// Seed of the sampler, where the server honours it (a signed 64-bit integer in the API:
    /// see [`crate::openai::client::wire_seed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Ask for per-token log-probabilities of the sampled tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<bool>,
    /// Number of choices; `serve` supports 1..=16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<i64>,
    /// Server-sent events as tokens come (the client never asks for them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// Why generation of a choice ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// End of sequence token or a stop string.
    Stop,
    /// `max_tokens` reached.
    Length,
}

/// The log-probability of one generated token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token's text.
    pub token: String,
    /// Natural-log probability under the distribution it was sampled from.
    pub logprob: f64,
}

/// Per-choice log-probabilities (`choices[i].logprobs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChoiceLogprobs {
    /// One entry per generated token.
    pub content: Vec<TokenLogprob>,
}

/// One generated choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Choice {
    /// Position in `choices`.
    pub index: usize,
    /// The assistant's message.
    pub message: WireMessage,
    /// Why it ended.
    pub finish_reason: FinishReason,
    /// Token log-probabilities when requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<ChoiceLogprobs>,
}

/// Token counts of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    /// Tokens in the rendered prompt.
    pub prompt_tokens: usize,
    /// Tokens generated over all choices.
    pub completion_tokens: usize,
    /// Their sum.
    pub total_tokens: usize,
}

/// The body of a chat-completions response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChatCompletionResponse {
    /// Unique id of the completion.
    pub id: String,
    /// Always `chat.completion`.
    pub object: String,
    /// Unix time in seconds.
    pub created: u64,
    /// Model id.
    pub model: String,
    /// The generated choices.
    pub choices: Vec<Choice>,
    /// Token counts.
    pub usage: Usage,
}

/// The log-probabilities of a completion choice, in the completions API's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompletionLogprobs {
    /// Each generated token as `token_id:<id>` (vLLM's `return_tokens_as_token_ids` form).
    pub tokens: Vec<String>,
    /// The log-probability of each, under the distribution it was sampled from.
    pub token_logprobs: Vec<f64>,
    /// Alternatives are not computed: always null.
    pub top_logprobs: Option<Vec<serde_json::Value>>,
}

/// One choice of a completions response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompletionChoice {
    /// Position in `choices`.
    pub index: usize,
    /// The generated text (cut before a stop string unless `include_stop_str_in_output`).
    pub text: String,
    /// Why it ended.
    pub finish_reason: FinishReason,
    /// Token log-probabilities when `logprobs` was asked.
    pub logprobs: Option<CompletionLogprobs>,
    /// The prompt's token ids, with `return_token_ids`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// The generated token ids, a stop string's included, with `return_token_ids`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
}

/// The body of a completions response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompletionResponse {
    /// Unique id of the completion.
    pub id: String,
    /// Always `text_completion`.
    pub object: String,
    /// Unix time in seconds.
    pub created: u64,
    /// Model id.
    pub model: String,
    /// The generated choices.
    pub choices: Vec<CompletionChoice>,
    /// Token counts.
    pub usage: Usage,
}

/// The content a streamed choice adds (`choices[i].delta`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub(crate) struct Delta {
    /// `assistant`, in a choice's first chunk only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// New text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// One choice of a streamed chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChunkChoice {
    /// Position in `choices` of the whole answer.
    pub index: usize,
    /// What this chunk adds.
    pub delta: Delta,
    /// Log-probabilities of the tokens this chunk covers, when requested.
    pub logprobs: Option<ChoiceLogprobs>,
    /// Set in the choice's last chunk.
    pub finish_reason: Option<FinishReason>,
}

/// One server-sent event of a streamed chat completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChatCompletionChunk {
    /// The completion's id, the same in every chunk.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: String,
    /// Unix time in seconds.
    pub created: u64,
    /// Model id.
    pub model: String,
    /// The choices this chunk is about (empty in the usage chunk).
    pub choices: Vec<ChunkChoice>,
    /// Token counts, in a last chunk of their own when `stream_options.include_usage` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One entry of `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ModelInfo {
    /// Model id.
    pub id: String,
    /// Always `model`.
    pub object: String,
    /// Unix time in seconds.
    pub created: u64,
    /// Who serves it.
    pub owned_by: String,
}

/// The body of `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ModelList {
    /// Always `list`.
    pub object: String,
    /// The models.
    pub data: Vec<ModelInfo>,
}

/// The body of an error response: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong, in OpenAI's error shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ErrorDetail {
    /// Human-readable explanation.
    pub message: String,
    /// `invalid_request_error`, `not_found_error` or `server_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The request field at fault, if any.
    #[serde(default)]
    pub param: Option<String>,
    /// A machine-readable code (`rate_limit_exceeded` for a full queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}
