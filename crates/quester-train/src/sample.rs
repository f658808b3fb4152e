//! The record of one generated response: a play turn or a reflection, with everything the
//! advantage computation, the loss and the logs need.

use serde::{Deserialize, Serialize};

/// Play turn or reflection step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleKind {
    Play,
    Reflect,
}

/// One training sample (prompt -> response).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The task group key (all trials of one task in one batch share it).
    pub task_id: String,
    pub task_seed: u64,
    /// Trial index within the task's group.
    pub trial: usize,
    /// 0-based attempt.
    pub attempt: usize,
    /// 0-based turn within the attempt (0 for reflections).
    pub turn: usize,
    pub kind: SampleKind,
    /// The raw observation the response acted on (GiGPO step-group key); a shared constant for
    /// reflections.
    pub anchor: String,
    pub reward: f64,
    /// False for an unparsable/disallowed action or a reflection without `<remark>`.
    pub valid: bool,
    /// The environment reported success on this step.
    pub won: bool,
    /// The attempt this sample belongs to was won.
    pub attempt_won: bool,
    /// The prompt as text (the last user message), kept for trajectory logs.
    pub prompt: String,
    /// The reply as the environment saw it: the forced response prefix (if any; its tokens are
    /// part of `prompt_ids`) followed by the generated text.
    pub response: String,
    pub prompt_ids: Vec<u32>,
    pub response_ids: Vec<u32>,
    pub logprobs: Vec<f32>,
    pub temperatures: Vec<f32>,
}

/// Anchor shared by every reflection step (they form one step group per task).
pub const REFLECT_ANCHOR: &str = "<reflection>";

/// Per-attempt outcome of a trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptOutcome {
    pub won: bool,
    pub reward_sum: f64,
    pub turns: usize,
    pub invalid: usize,
}

/// A whole trial: its attempts and its samples in generation order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub task_id: String,
    pub task_seed: u64,
    pub trial: usize,
    pub attempts: Vec<AttemptOutcome>,
    pub samples: Vec<Sample>,
}

impl Trial {
    /// Won in any attempt < k (pass@k for this trial).
    pub fn won_within(&self, k: usize) -> bool {
        self.attempts.iter().take(k).any(|a| a.won)
    }
}
