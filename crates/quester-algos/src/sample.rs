//! The plain-data record of one training sample (one turn: prompt -> response), as the rollout
//! engine hands it to the RL math.

use serde::{Deserialize, Serialize};

/// What a sample's response was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A turn of play: the response is an environment action.
    Play,
    /// A reflection written between two attempts (LaMer, MAGE); trained like any other step.
    Reflect,
}

/// One turn-sample of a rollout, reduced to what returns, advantages and metrics need.
///
/// Conventions:
/// - `task_key` names the group of rollouts that are compared with each other (the episode
///   group): the task instance, plus anything else that must match, e.g. the opponent id for
///   MAGE's per-opponent normalisation. Grouping is by exact string equality.
/// - A trial is identified by `(task_key, trial_id)`; `trial_id` need only be unique inside its
///   task group. A plain RL rollout is a trial with one attempt.
/// - `attempt` is 0-based. A reflection sample carries the index of the attempt it PRECEDES (the
///   reflection written after attempt 0 has `attempt = 1`), so a reflection at attempt 0 is an
///   error.
/// - `turn` orders the play samples inside an attempt (0-based; gaps are allowed, duplicates are
///   not). It is ignored for reflections.
/// - `anchor` is the raw environment observation the turn acted on (no history, no memory);
///   GiGPO groups play samples with equal anchors. Ignored for reflections.
/// - `reward` is the environment reward of this step (0 for reflections).
/// - `invalid` flags a response that did not parse to a valid action (or a reflection without
///   its `<remark>` tag); it costs the invalid-action penalty in the episode score.
/// - `won` is true on the step where the environment reported success.
/// - `score_penalty` is subtracted from the sample's episode score only (never from rewards or
///   returns, so GiGPO's step term does not see it): MAGE's length penalty. 0 by default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub task_key: String,
    pub trial_id: u64,
    pub attempt: usize,
    pub turn: usize,
    pub kind: StepKind,
    pub anchor: String,
    pub reward: f64,
    pub invalid: bool,
    pub won: bool,
    #[serde(default)]
    pub score_penalty: f64,
}

impl StepRecord {
    /// A play step with the given reward; the other flags false.
    pub fn play(
        task_key: &str,
        trial_id: u64,
        attempt: usize,
        turn: usize,
        anchor: &str,
        reward: f64,
    ) -> Self {
        StepRecord {
            task_key: task_key.to_string(),
            trial_id,
            attempt,
            turn,
            kind: StepKind::Play,
            anchor: anchor.to_string(),
            reward,
            invalid: false,
            won: false,
            score_penalty: 0.0,
        }
    }

    /// A reflection written before attempt `attempt` (>= 1); reward 0, valid.
    pub fn reflect(task_key: &str, trial_id: u64, attempt: usize) -> Self {
        StepRecord {
            task_key: task_key.to_string(),
            trial_id,
            attempt,
            turn: 0,
            kind: StepKind::Reflect,
            anchor: String::new(),
            reward: 0.0,
            invalid: false,
            won: false,
            score_penalty: 0.0,
        }
    }

    /// Builder-style: marks the step invalid.
    pub fn with_invalid(mut self, invalid: bool) -> Self {
        self.invalid = invalid;
        self
    }

    /// Builder-style: a penalty on the episode score only (MAGE's length penalty).
    pub fn with_score_penalty(mut self, penalty: f64) -> Self {
        self.score_penalty = penalty;
        self
    }

    /// Builder-style: marks the step as the winning one.
    pub fn with_won(mut self, won: bool) -> Self {
        self.won = won;
        self
    }
}
