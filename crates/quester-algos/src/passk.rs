//! Evaluation metrics over trials: pass@k over attempts, mean episode reward, invalid rates.

use crate::error::AlgoError;
use crate::sample::{StepKind, StepRecord};
use crate::trial::layout_trials;

/// `pass[k-1]` for k = 1..=k_max: the share of trials won in any of their first k attempts.
/// `attempt_wins[j][a]` says whether trial j's attempt a was won; missing attempts (skipped
/// after a win, or never played) count as not won. No trials gives all zeros.
pub fn pass_at_k(attempt_wins: &[Vec<bool>], k_max: usize) -> Vec<f64> {
    if attempt_wins.is_empty() {
        return vec![0.0; k_max];
    }
    (1..=k_max)
        .map(|k| {
            let won = attempt_wins
                .iter()
                .filter(|w| w.iter().take(k).any(|&x| x))
                .count();
            won as f64 / attempt_wins.len() as f64
        })
        .collect()
}

/// Summary of an evaluation batch.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalSummary {
    pub trials: usize,
    /// pass@1..=k_max.
    pub pass_at: Vec<f64>,
    /// Mean over played attempts of the attempt's summed reward.
    pub mean_episode_reward: f64,
    /// Share of play samples flagged invalid.
    pub invalid_rate: f64,
    /// Share of reflection samples flagged invalid (0 when there are none).
    pub reflection_invalid_rate: f64,
}

/// Summarises samples of complete trials. An attempt counts as won when any of its play
/// samples has `won`.
pub fn summarize(samples: &[StepRecord], k_max: usize) -> Result<EvalSummary, AlgoError> {
    let trials = layout_trials(samples)?;
    let wins: Vec<Vec<bool>> = trials
        .iter()
        .map(|t| {
            t.attempts
                .iter()
                .map(|a| a.play.iter().any(|&i| samples[i].won))
                .collect()
        })
        .collect();
    let episode_rewards: Vec<f64> = trials
        .iter()
        .flat_map(|t| t.attempts.iter())
        .filter(|a| !a.play.is_empty())
        .map(|a| a.play.iter().map(|&i| samples[i].reward).sum())
        .collect();
    let rate = |kind: StepKind| {
        let of_kind: Vec<&StepRecord> = samples.iter().filter(|s| s.kind == kind).collect();
        if of_kind.is_empty() {
            0.0
        } else {
            of_kind.iter().filter(|s| s.invalid).count() as f64 / of_kind.len() as f64
        }
    };
    Ok(EvalSummary {
        trials: trials.len(),
        pass_at: pass_at_k(&wins, k_max),
        mean_episode_reward: if episode_rewards.is_empty() {
            0.0
        } else {
            episode_rewards.iter().sum::<f64>() / episode_rewards.len() as f64
        },
        invalid_rate: rate(StepKind::Play),
        reflection_invalid_rate: rate(StepKind::Reflect),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_at_k_by_hand() {
        // 4 trials: won at attempt 0; won at 1; won at 2; never. pass@1 = 1/4, pass@2 = 2/4,
        // pass@3 = 3/4.
        let w = vec![
            vec![true],
            vec![false, true],
            vec![false, false, true],
            vec![false, false, false],
        ];
        assert_eq!(pass_at_k(&w, 3), vec![0.25, 0.5, 0.75]);
        assert_eq!(pass_at_k(&[], 2), vec![0.0, 0.0]);
    }

    #[test]
    fn summary_by_hand() {
        // Trial 0: attempt 0 lost (rewards 0, 0; one invalid), reflection (invalid), attempt 1
        // won (reward 1). Trial 1: attempt 0 won (reward 1).
        // pass@1 = 1/2, pass@2 = 2/2. Episodes: 0, 1, 1 -> mean 2/3. Play invalid 1/4,
        // reflection invalid 1/1.
        let s = vec![
            StepRecord::play("t", 0, 0, 0, "a", 0.0),
            StepRecord::play("t", 0, 0, 1, "b", 0.0).with_invalid(true),
            StepRecord::reflect("t", 0, 1).with_invalid(true),
            StepRecord::play("t", 0, 1, 0, "a", 1.0).with_won(true),
            StepRecord::play("t", 1, 0, 0, "a", 1.0).with_won(true),
        ];
        let e = summarize(&s, 2).unwrap();
        assert_eq!(e.trials, 2);
        assert_eq!(e.pass_at, vec![0.5, 1.0]);
        assert!((e.mean_episode_reward - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(e.invalid_rate, 0.25);
        assert_eq!(e.reflection_invalid_rate, 1.0);
    }
}
