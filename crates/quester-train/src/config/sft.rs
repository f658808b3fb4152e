//! `[sft]`: supervised fine-tuning on chat examples (`quester sft`). The optimiser, its
//! schedule, the gradient clip, the seed, checkpointing and the micro-batch budget are
//! `[training]`'s, as in RL (a `training.lr_schedule.total_steps` of 0 becomes the number of
//! steps the run plans); the model and its LoRA are `[model]`'s.

use serde::{Deserialize, Serialize};

/// What happens to an example longer than `sft.max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlong {
    /// Stop with an error naming the line.
    #[default]
    Error,
    /// Leave the example out (counted in the log and the summary).
    Skip,
    /// Keep its first `max_tokens` tokens (counted in the log and the summary).
    Truncate,
}

/// See the module doc.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SftSection {
    /// JSONL of chat examples, one `{"messages": [{"role", "content"}, ...]}` per line (what
    /// `quester demos` writes, OpenAI fine-tuning files, TRL's conversational datasets).
    pub data: String,
    /// Passes over the training examples.
    pub epochs: usize,
    /// Stop after this many optimiser steps (0: the epochs decide).
    pub max_steps: usize,
    /// Tokens per optimiser step: examples are packed into a step until the next one would
    /// pass this budget (an example longer than it is a step of its own).
    pub step_tokens: usize,
    /// Share of the examples held out for the validation loss (whole episodes, where lines
    /// name one, so no episode is on both sides).
    pub val_fraction: f64,
    /// Validation loss every this many steps (0: only at the end).
    pub val_every: usize,
    /// The longest example, in tokens of the rendered chat.
    pub max_tokens: usize,
    /// `error`, `skip` or `truncate` (see [`Overlong`]).
    pub overlong: Overlong,
}

impl Default for SftSection {
    fn default() -> Self {
        Self {
            data: String::new(),
            epochs: 1,
            max_steps: 0,
            step_tokens: 4096,
            val_fraction: 0.05,
            val_every: 25,
            max_tokens: 1024,
            overlong: Overlong::Error,
        }
    }
}

impl SftSection {
    /// Checks what `quester sft` needs, naming the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.data.is_empty() {
            return Err("sft.data: the JSONL of chat examples to train on is required".into());
        }
        if self.epochs == 0 {
            return Err("sft.epochs: must be at least 1".into());
        }
        if self.step_tokens == 0 {
            return Err("sft.step_tokens: must be at least 1".into());
        }
        if self.max_tokens < 2 {
            return Err("sft.max_tokens: must be at least 2".into());
        }
        if !(0.0..1.0).contains(&self.val_fraction) {
            return Err(format!(
                "sft.val_fraction = {}: must be in [0, 1)",
                self.val_fraction
            ));
        }
        Ok(())
    }
}
