//! Evaluation metrics over trials: pass@k over attempts, the unbiased pass@k estimator over
//! samples per task (Chen et al. 2021), mean episode reward, invalid rates.

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

/// The unbiased estimate of pass@k from `n` samples of a task of which `c` were correct
/// (Chen et al. 2021): `1 - C(n-c, k) / C(n, k)`, the chance that k samples drawn without
/// replacement from the n contain a correct one. Computed as the product
/// `1 - prod_{i = n-c+1}^{n} (1 - k / i)`, which never forms a binomial coefficient, so it is
/// exact to rounding for any n.
///
/// Out-of-range arguments clamp rather than fail: `k > n` is estimated as pass@n (a lower
/// bound on pass@k; `0` or `1`, whether any sample was correct), `c > n` counts as `c = n`, and
/// `k = 0` or `n = 0` gives 0.
pub fn pass_at_k_unbiased(n: usize, c: usize, k: usize) -> f64 {
    let c = c.min(n);
    let k = k.min(n);
    if k == 0 || c == 0 {
        return 0.0;
    }
    if n - c < k {
        // Every k-subset holds a correct sample.
        return 1.0;
    }
    let miss: f64 = (n - c + 1..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    1.0 - miss
}

/// The pass@k curve of an evaluation: for each k of `ks`, the mean over tasks of
/// [`pass_at_k_unbiased`]; `per_task` holds one `(n, c)` per task (samples, correct ones). No
/// tasks gives all zeros.
pub fn pass_at_k_curve(per_task: &[(usize, usize)], ks: &[usize]) -> Vec<f64> {
    ks.iter()
        .map(|&k| {
            if per_task.is_empty() {
                return 0.0;
            }
            per_task
                .iter()
                .map(|&(n, c)| pass_at_k_unbiased(n, c, k))
                .sum::<f64>()
                / per_task.len() as f64
        })
        .collect()
}

/// The ks of a pass@k curve: 1, 2, 4, ... up to `max`, and `max` itself when it is not a power
/// of two (so the curve always ends at the number of samples drawn: 6 -> 1, 2, 4, 6). `max = 0`
/// gives none.
pub fn powers_of_two_up_to(max: usize) -> Vec<usize> {
    let mut out: Vec<usize> = std::iter::successors(Some(1usize), |&k| k.checked_mul(2))
        .take_while(|&k| k <= max)
        .collect();
    if max > 0 && !max.is_power_of_two() {
        out.push(max);
    }
    out
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

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn unbiased_pass_at_k_by_hand() {
        // n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6.
        assert!(close(pass_at_k_unbiased(4, 1, 2), 0.5));
        // n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10.
        assert!(close(pass_at_k_unbiased(5, 2, 2), 0.7));
        // pass@1 is the share correct.
        assert!(close(pass_at_k_unbiased(8, 3, 1), 3.0 / 8.0));
        // n=8, c=1, k=4: 1 - C(7,4)/C(8,4) = 1 - 35/70.
        assert!(close(pass_at_k_unbiased(8, 1, 4), 0.5));
        // Fewer wrong samples than k: certain.
        assert_eq!(pass_at_k_unbiased(4, 3, 2), 1.0);
        assert_eq!(pass_at_k_unbiased(4, 4, 1), 1.0);
        assert_eq!(pass_at_k_unbiased(4, 0, 4), 0.0);
    }

    #[test]
    fn unbiased_pass_at_k_clamps() {
        // k > n is pass@n; c > n is c = n; k = 0 and n = 0 give 0.
        assert_eq!(pass_at_k_unbiased(3, 1, 8), 1.0);
        assert_eq!(pass_at_k_unbiased(3, 0, 8), 0.0);
        assert_eq!(pass_at_k_unbiased(3, 5, 1), 1.0);
        assert_eq!(pass_at_k_unbiased(3, 1, 0), 0.0);
        assert_eq!(pass_at_k_unbiased(0, 0, 1), 0.0);
    }

    #[test]
    fn unbiased_pass_at_k_is_stable_for_large_n() {
        // C(10000, 5000) overflows f64; the product form does not. n=10000, c=1: k/n.
        assert!(close(pass_at_k_unbiased(10_000, 1, 5_000), 0.5));
        let p = pass_at_k_unbiased(10_000, 3, 100);
        // 1 - (1 - 100/9998)(1 - 100/9999)(1 - 100/10000)
        let want = 1.0 - (9898.0 / 9998.0) * (9899.0 / 9999.0) * (9900.0 / 10000.0);
        assert!(close(p, want), "{p} vs {want}");
    }

    /// The share of k-subsets of n samples (the first c correct) holding a correct one.
    fn brute_force(n: usize, c: usize, k: usize) -> f64 {
        let (mut hit, mut all) = (0u64, 0u64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != k {
                continue;
            }
            all += 1;
            if mask & ((1u32 << c) - 1) != 0 {
                hit += 1;
            }
        }
        hit as f64 / all as f64
    }

    #[test]
    fn unbiased_pass_at_k_equals_enumeration_of_subsets() {
        for n in 1..=10 {
            for c in 0..=n {
                for k in 1..=n {
                    let (p, b) = (pass_at_k_unbiased(n, c, k), brute_force(n, c, k));
                    assert!(close(p, b), "n={n} c={c} k={k}: {p} vs {b}");
                }
            }
        }
    }

    #[test]
    fn curve_is_the_mean_over_tasks() {
        // Task A: n=4, c=1 -> 0.25, 0.5, 1. Task B: n=4, c=0 -> 0, 0, 0.
        let ks = powers_of_two_up_to(4);
        let curve = pass_at_k_curve(&[(4, 1), (4, 0)], &ks);
        assert_eq!(ks, vec![1, 2, 4]);
        assert!(close(curve[0], 0.125) && close(curve[1], 0.25) && close(curve[2], 0.5));
        assert_eq!(pass_at_k_curve(&[], &ks), vec![0.0; 3]);
    }

    #[test]
    fn powers_of_two_end_at_max() {
        assert_eq!(powers_of_two_up_to(0), Vec::<usize>::new());
        assert_eq!(powers_of_two_up_to(1), vec![1]);
        assert_eq!(powers_of_two_up_to(8), vec![1, 2, 4, 8]);
        assert_eq!(powers_of_two_up_to(6), vec![1, 2, 4, 6]);
        assert_eq!(powers_of_two_up_to(3), vec![1, 2, 3]);
    }
}
