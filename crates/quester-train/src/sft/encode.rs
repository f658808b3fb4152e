//! A conversation as training tokens: the chat template renders it, and only the tokens of the
//! assistant turns (their content and the template's end-of-turn marker) are targets.
//!
//! Each turn's text is cut out of the template's own renderings: the prompt before assistant
//! turn k is `render(messages[..k], add_generation_prompt = true)`, the text through it
//! `render(messages[..=k], false)`; the turn is the difference. The pieces are tokenised one by
//! one, so a prompt is tokenised exactly as `generate` tokenises it and the answer's tokens
//! start where generation starts.

use quester_model::{ChatMessage, ChatTemplate, Tokenizer};

/// Why a conversation cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("no assistant message to train on")]
    NoAssistant,
    #[error("message {index} has role {role:?}; roles are system, user and assistant")]
    Role { index: usize, role: String },
    #[error(
        "the chat template does not render the conversation up to message {index} as a prefix of \
         the conversation through it, so its assistant tokens cannot be told apart"
    )]
    NotPrefix { index: usize },
    #[error("chat template: {0}")]
    Template(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
}

/// Token ids and which of them are targets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Encoded {
    pub ids: Vec<u32>,
    /// `trained[j]`: token j is predicted and counts in the loss (false for the first token).
    pub trained: Vec<bool>,
}

impl Encoded {
    /// Number of target tokens.
    pub fn targets(&self) -> usize {
        self.trained.iter().filter(|&&t| t).count()
    }

    /// Keeps the first `n` tokens.
    pub fn truncate(&mut self, n: usize) {
        self.ids.truncate(n);
        self.trained.truncate(n);
    }
}

/// Encodes `messages` (roles system / user / assistant) for supervised training.
pub fn encode(
    messages: &[ChatMessage],
    template: &ChatTemplate,
    tokenizer: &Tokenizer,
) -> Result<Encoded, EncodeError> {
    for (index, m) in messages.iter().enumerate() {
        if !matches!(m.role.as_str(), "system" | "user" | "assistant") {
            return Err(EncodeError::Role {
                index,
                role: m.role.clone(),
            });
        }
    }
    let last = messages
        .iter()
        .rposition(|m| m.role == "assistant")
        .ok_or(EncodeError::NoAssistant)?;
    let render = |msgs: &[ChatMessage], gen: bool| {
        template
            .render(msgs, gen)
            .map_err(|e| EncodeError::Template(e.to_string()))
    };
    let tokens = |text: &str| {
        tokenizer
            .encode(text)
            .map_err(|e| EncodeError::Tokenizer(e.to_string()))
    };
    let mut out = Encoded::default();
    // The text rendered (and tokenised) so far.
    let mut done = String::new();
    let push = |out: &mut Encoded, text: &str, trained: bool| -> Result<(), EncodeError> {
        let ids = tokens(text)?;
        let start = out.ids.len();
        out.ids.extend_from_slice(&ids);
        // The very first token is never a target (nothing predicts it).
        out.trained
            .extend((0..ids.len()).map(|j| trained && start + j > 0));
        Ok(())
    };
    for (k, m) in messages.iter().enumerate().take(last + 1) {
        if m.role != "assistant" {
            continue;
        }
        let prompt = render(&messages[..k], true)?;
        let through = render(&messages[..=k], false)?;
        let (Some(before), Some(turn)) = (
            prompt.strip_prefix(done.as_str()),
            through.strip_prefix(prompt.as_str()),
        ) else {
            return Err(EncodeError::NotPrefix { index: k });
        };
        push(&mut out, before, false)?;
        push(&mut out, turn, true)?;
        done = through;
    }
    Ok(out)
}
