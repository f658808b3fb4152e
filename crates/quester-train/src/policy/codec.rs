//! A policy's text side (chat template and tokenizer) as a shareable value, for callers that
//! need it while the policy itself is busy generating (a server checks a conversation before
//! queueing it, and decodes streamed tokens, on its own threads).

use super::ChatMessage;
use crate::error::TrainError;

/// Renders prompts and decodes tokens as the policy does.
pub trait TextCodec: Send + Sync {
    /// The prompt token ids the policy would condition on (see [`super::Policy::encode`]), or
    /// why the conversation cannot be rendered.
    fn encode(
        &self,
        messages: &[ChatMessage],
        response_prefix: &str,
    ) -> Result<Vec<u32>, TrainError>;

    /// The text of generated token ids, as the policy's responses decode them.
    fn decode(&self, ids: &[u32]) -> Result<String, TrainError>;

    /// Plain text as token ids, as the engine tokenises text it forces into a response (no
    /// template, no special tokens added).
    fn encode_text(&self, text: &str) -> Result<Vec<u32>, TrainError>;

    /// Token ids run from 0 to this, exclusive.
    fn vocab_size(&self) -> usize;

    /// The end-of-sequence ids: a response that ends with one has it in its tokens, not in its
    /// text.
    fn eos_ids(&self) -> Vec<u32>;
}

/// Checks a caller's token-id prompt: not empty, every id inside the vocabulary (an id outside
/// would fail deep in the model's embedding lookup instead of naming the request's fault).
pub fn check_prompt_ids(ids: &[u32], vocab_size: usize) -> Result<(), TrainError> {
    if ids.is_empty() {
        return Err(TrainError::Policy("the token-id prompt is empty".into()));
    }
    match ids.iter().position(|&id| id as usize >= vocab_size) {
        Some(at) => Err(TrainError::Policy(format!(
            "prompt token {at} is id {}, outside the vocabulary (0..{vocab_size})",
            ids[at]
        ))),
        None => Ok(()),
    }
}
