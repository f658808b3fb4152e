//! What a generation request asks for and what it returns.

use serde::{Deserialize, Serialize};

/// Switch to another temperature once `marker` has appeared in the generated text (for example
/// sample a strategy hot until `</strategy>`, then act cooler).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemperatureSwitch {
    /// Text whose appearance in the response triggers the switch.
    pub marker: String,
    /// Temperature for every token after the marker.
    pub temperature: f64,
}

/// Text forced into a response at a fixed point, not sampled: right after `marker` appears,
/// or, when `max_tokens` tokens pass without it or the model ends its response before it,
/// `marker` and `text` both (in place of the end-of-sequence token). SGE closes its
/// strategy segment this way (`</strategy>` then `\n<action>\n`), so a small model that would
/// ramble on always reaches its action. Forced tokens are recorded at temperature 0 with the
/// untempered model's log-probability of each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scaffold {
    /// Text whose appearance triggers `text`.
    pub marker: String,
    /// Text forced right after the marker.
    pub text: String,
    /// Tokens after which the marker itself is forced (0: never).
    pub max_tokens: usize,
}

/// Sampling settings of one sequence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SamplingParams {
    /// Softmax temperature; 0 means greedy.
    pub temperature: f64,
    /// Nucleus sampling mass (1 disables).
    pub top_p: f64,
    /// Keep only the k most likely tokens (0 disables).
    pub top_k: usize,
    /// Maximum number of new tokens.
    pub max_new_tokens: usize,
    /// Generation stops once the response text contains any of these.
    pub stop: Vec<String>,
    /// Optional temperature change inside the response.
    pub temperature_switch: Option<TemperatureSwitch>,
    /// Optional forced text inside the response.
    pub scaffold: Option<Scaffold>,
    /// Seed of this sequence's own RNG (ChaCha8).
    pub seed: u64,
    /// Keep generating after EOS (benchmarks only).
    pub ignore_eos: bool,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_new_tokens: 256,
            stop: Vec::new(),
            temperature_switch: None,
            scaffold: None,
            seed: 0,
            ignore_eos: false,
        }
    }
}

impl SamplingParams {
    /// Greedy decoding of at most `max_new_tokens`.
    pub fn greedy(max_new_tokens: usize) -> Self {
        SamplingParams {
            temperature: 0.0,
            max_new_tokens,
            ..Default::default()
        }
    }
}

/// One sequence to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationRequest {
    /// Prompt token ids (already chat-formatted and tokenised).
    pub prompt_ids: Vec<u32>,
    /// How to sample.
    pub params: SamplingParams,
}

/// Why a sequence ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinishReason {
    /// An end-of-sequence token was generated (it is the last id, not part of the text).
    Eos,
    /// The response text contains this stop string.
    Stop(String),
    /// `max_new_tokens` reached.
    Length,
}

/// The result of one sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationOutput {
    /// Generated ids (including a final EOS token when `finish_reason` is `Eos`).
    pub token_ids: Vec<u32>,
    /// Decoded text of the generated ids without the final EOS token.
    pub text: String,
    /// Per token: log-probability under the distribution it was sampled from (temperature,
    /// top-k and top-p applied); for greedy tokens, under the untempered model.
    pub logprobs: Vec<f32>,
    /// Per token: the temperature used.
    pub temperatures: Vec<f32>,
    /// Why generation ended.
    pub finish_reason: FinishReason,
}
