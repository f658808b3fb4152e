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
}
