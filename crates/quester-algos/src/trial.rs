//! Reassembles trials from a flat, unordered list of samples: which samples belong to which
//! attempt of which trial, in turn order. Returns and scores are computed on this layout.

use crate::error::{check_finite, AlgoError};
use crate::sample::{StepKind, StepRecord};
use std::collections::HashMap;

/// The samples of one attempt, as indices into the input slice.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptSlots {
    /// Play samples in turn order.
    pub play: Vec<usize>,
    /// The reflection written before this attempt, if any.
    pub reflect: Option<usize>,
}

/// One trial: its task group, its id and its attempts (index = attempt number; attempts with no
/// samples, e.g. skipped after a win, are empty).
#[derive(Debug, Clone, PartialEq)]
pub struct TrialSlots {
    pub task_key: String,
    pub trial_id: u64,
    pub attempts: Vec<AttemptSlots>,
}

/// Groups samples into trials, in order of first appearance, after validating them: rewards
/// finite, no reflection before attempt 0, no duplicate (trial, attempt, turn) play sample and
/// at most one reflection per attempt.
pub fn layout_trials(samples: &[StepRecord]) -> Result<Vec<TrialSlots>, AlgoError> {
    let rewards: Vec<f64> = samples.iter().map(|s| s.reward).collect();
    check_finite("reward", &rewards)?;
    let penalties: Vec<f64> = samples.iter().map(|s| s.score_penalty).collect();
    check_finite("score penalty", &penalties)?;
    let mut index_of: HashMap<(&str, u64), usize> = HashMap::new();
    let mut trials: Vec<TrialSlots> = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        let t = *index_of
            .entry((s.task_key.as_str(), s.trial_id))
            .or_insert_with(|| {
                trials.push(TrialSlots {
                    task_key: s.task_key.clone(),
                    trial_id: s.trial_id,
                    attempts: Vec::new(),
                });
                trials.len() - 1
            });
        let attempts = &mut trials[t].attempts;
        if attempts.len() <= s.attempt {
            attempts.resize(s.attempt + 1, AttemptSlots::default());
        }
        let slot = &mut attempts[s.attempt];
        match s.kind {
            StepKind::Play => slot.play.push(i),
            StepKind::Reflect => {
                if s.attempt == 0 {
                    return Err(AlgoError::InvalidSample {
                        index: i,
                        reason: "a reflection must precede an attempt >= 1".into(),
                    });
                }
                if let Some(prev) = slot.reflect {
                    return Err(AlgoError::DuplicateSample(format!(
                        "samples {prev} and {i} are both the reflection before attempt {} of trial {} of task `{}`",
                        s.attempt, s.trial_id, s.task_key
                    )));
                }
                slot.reflect = Some(i);
            }
        }
    }
    for trial in &mut trials {
        for (a, slot) in trial.attempts.iter_mut().enumerate() {
            slot.play.sort_by_key(|&i| samples[i].turn);
            if let Some(w) = slot
                .play
                .windows(2)
                .find(|w| samples[w[0]].turn == samples[w[1]].turn)
            {
                return Err(AlgoError::DuplicateSample(format!(
                    "samples {} and {} are both turn {} of attempt {a} of trial {} of task `{}`",
                    w[0], w[1], samples[w[0]].turn, trial.trial_id, trial.task_key
                )));
            }
        }
    }
    Ok(trials)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_turns_and_places_reflections() {
        let s = vec![
            StepRecord::play("t", 0, 1, 1, "b", 1.0),
            StepRecord::play("t", 0, 0, 0, "a", 0.0),
            StepRecord::reflect("t", 0, 1),
            StepRecord::play("t", 0, 1, 0, "a", 0.0),
            StepRecord::play("u", 0, 0, 0, "a", 0.0),
        ];
        let l = layout_trials(&s).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].attempts[0].play, vec![1]);
        assert_eq!(l[0].attempts[1].play, vec![3, 0]);
        assert_eq!(l[0].attempts[1].reflect, Some(2));
        assert_eq!(l[1].task_key, "u");
    }

    #[test]
    fn rejects_bad_samples() {
        let dup = vec![
            StepRecord::play("t", 0, 0, 2, "a", 0.0),
            StepRecord::play("t", 0, 0, 2, "b", 0.0),
        ];
        assert!(matches!(
            layout_trials(&dup),
            Err(AlgoError::DuplicateSample(_))
        ));
        let early = vec![StepRecord::reflect("t", 0, 0)];
        assert!(matches!(
            layout_trials(&early),
            Err(AlgoError::InvalidSample { index: 0, .. })
        ));
        let two = vec![
            StepRecord::reflect("t", 0, 1),
            StepRecord::reflect("t", 0, 1),
        ];
        assert!(matches!(
            layout_trials(&two),
            Err(AlgoError::DuplicateSample(_))
        ));
        let nan = vec![StepRecord::play("t", 0, 0, 0, "a", f64::NAN)];
        assert!(matches!(
            layout_trials(&nan),
            Err(AlgoError::NonFinite { .. })
        ));
    }
}
