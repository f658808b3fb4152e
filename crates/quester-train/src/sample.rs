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

/// Which log-probs the importance ratio divides by, when the recorded ones are not the current
/// policy's under the training context (see [`crate::behaviour`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OldLogprobs {
    /// Decided from the record: the recorded behaviour log-probs when they are exactly the
    /// policy's (temperature 1, no top-k / top-p, trained in the context it was sampled in),
    /// else the current weights' log-probs in the training context, rescored before the
    /// step's first update.
    #[default]
    Auto,
    /// Always the recorded behaviour log-probs, even in another training context: an
    /// importance ratio across contexts (EMPO2's off-policy update as its paper reads).
    Behaviour,
}

/// What a sample is to the update: a response of the policy's own, or one a method added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleRole {
    /// Sampled by the policy in play or reflection; trained with the clipped objective.
    #[default]
    Policy,
    /// HeRL's hindsight rewrite that took a slot of its group; trained with the hindsight
    /// objective (`-A rho / (rho + gamma)`, unclipped).
    Hindsight,
    /// A rewrite that was generated and scored but not chosen: logged, not trained.
    Rewrite,
    /// A response whose slot a hindsight sample took: logged, not trained.
    Replaced,
    /// The env's expert's answer (demonstrations, the expert's evaluation): never in an RL
    /// update; a supervised target.
    Expert,
    /// The noisy expert's random admissible action: played, so demonstrations visit the states
    /// it leads to, but never a target.
    ExpertRandom,
}

impl SampleRole {
    /// Whether samples of this role enter the update.
    pub fn is_trained(self) -> bool {
        matches!(self, SampleRole::Policy | SampleRole::Hindsight)
    }
}

/// One training sample (prompt -> response).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The task group key (all trials of one task in one batch share it; with opponents, the
    /// opponent is part of it).
    pub task_id: String,
    pub task_seed: u64,
    /// Trial index within the task's group.
    pub trial: usize,
    /// The opponent this trial played against (empty in single-agent envs).
    pub opponent: String,
    /// 0-based attempt.
    pub attempt: usize,
    /// 0-based turn within the attempt (0 for reflections).
    pub turn: usize,
    pub kind: SampleKind,
    /// The raw observation the response acted on (GiGPO step-group key); a shared constant for
    /// reflections.
    pub anchor: String,
    pub reward: f64,
    /// Added to this sample's episode score only, never to rewards or returns: a method's
    /// shaping of the group comparison (a length penalty is negative, a bonus positive).
    #[serde(default)]
    pub score_adjustment: f64,
    #[serde(default)]
    pub role: SampleRole,
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
    /// The context the response was sampled in.
    pub prompt_ids: Vec<u32>,
    /// The context it is trained in, when a method trains it under another one (None: the
    /// sampling context).
    pub train_prompt_ids: Option<Vec<u32>>,
    pub response_ids: Vec<u32>,
    /// Behaviour log-probability of every response token: of the distribution actually sampled
    /// from (temperature, top-k and top-p applied).
    pub logprobs: Vec<f32>,
    pub temperatures: Vec<f32>,
    /// top-k or top-p cut the distribution the tokens were drawn from.
    pub truncated_sampling: bool,
    pub old_logprobs: OldLogprobs,
}

impl Sample {
    /// The prompt ids the loss conditions on.
    pub(crate) fn training_prompt_ids(&self) -> &[u32] {
        self.train_prompt_ids.as_deref().unwrap_or(&self.prompt_ids)
    }
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
    /// What the attempt achieved, as the env keys it (`Env::outcome`: the final board, the set
    /// of tests passed); SGE's exploration measure counts distinct keys per task.
    #[serde(default)]
    pub outcome: String,
}

/// A whole trial: its attempts and its samples in generation order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub task_id: String,
    pub task_seed: u64,
    pub trial: usize,
    /// The opponent (empty in single-agent envs).
    pub opponent: String,
    pub attempts: Vec<AttemptOutcome>,
    pub samples: Vec<Sample>,
}

impl Trial {
    /// Won in any attempt < k (pass@k for this trial).
    pub fn won_within(&self, k: usize) -> bool {
        self.attempts.iter().take(k).any(|a| a.won)
    }

    /// The outcome of attempt `k` (0-based) as the trial stands after it: a won trial is
    /// frozen, so its later attempts count as its last played one.
    pub(crate) fn attempt_or_last(&self, k: usize) -> Option<&AttemptOutcome> {
        self.attempts.get(k).or_else(|| self.attempts.last())
    }
}
