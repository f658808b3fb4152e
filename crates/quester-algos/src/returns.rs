//! Discounted returns: inside one attempt (`step_gamma`) and across the attempts of a trial
//! (`traj_gamma`), in the paper's form and in the reference code's backward recursion.

use crate::error::{check_finite, AlgoError};
use crate::sample::StepRecord;
use crate::trial::layout_trials;
use serde::{Deserialize, Serialize};

/// How later attempts' returns flow back into an earlier attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrossAttemptReturn {
    /// LaMer paper, Eq. 4-5: `G_t^(n) = g_t^(n) + sum_{m>n} traj_gamma^(m-n) g_0^(m)`.
    #[default]
    Paper,
    /// The reference code: `R <- r + step_gamma R` inside an attempt, `R <- r + traj_gamma R`
    /// across a boundary, i.e. `G_t^(n) = g_t^(n) + step_gamma^(T_n-1-t) traj_gamma G_0^(n+1)`.
    ReferenceRecursion,
}

/// Discounting of returns. Defaults: LaMer's Sokoban script, `step_gamma = 0.95`,
/// `traj_gamma = 0.9` (its other scripts use 0.6), paper form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReturnConfig {
    /// Discount between turns of one attempt.
    pub step_gamma: f64,
    /// Discount between attempts of one trial; 0 makes every attempt independent.
    pub traj_gamma: f64,
    /// Which cross-attempt formula to use.
    pub form: CrossAttemptReturn,
}

impl Default for ReturnConfig {
    fn default() -> Self {
        ReturnConfig {
            step_gamma: 0.95,
            traj_gamma: 0.9,
            form: CrossAttemptReturn::Paper,
        }
    }
}

impl ReturnConfig {
    /// Both discounts must lie in [0, 1].
    pub fn validate(&self) -> Result<(), AlgoError> {
        for (key, v) in [
            ("step_gamma", self.step_gamma),
            ("traj_gamma", self.traj_gamma),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(AlgoError::Config {
                    key: key.into(),
                    value: v.to_string(),
                    allowed: "a number in [0, 1]".into(),
                });
            }
        }
        Ok(())
    }
}

/// Within-attempt discounted returns `g_t = r_t + gamma g_{t+1}`, `g_T = 0`.
pub fn discounted_returns(rewards: &[f64], gamma: f64) -> Vec<f64> {
    let mut out = vec![0.0; rewards.len()];
    let mut acc = 0.0;
    for t in (0..rewards.len()).rev() {
        acc = rewards[t] + gamma * acc;
        out[t] = acc;
    }
    out
}

/// Returns of every play step of a trial, plus the value at the start of each attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialReturns {
    /// `per_step[n][t]` is `G_t^(n)`.
    pub per_step: Vec<Vec<f64>>,
    /// `attempt_value[n]` is the return credited at the start of attempt n: `G_0^(n)` for an
    /// attempt with steps. A reflection before attempt n receives it. For an attempt with no
    /// steps (skipped) it is `traj_gamma * attempt_value[n+1]` in both forms, which is 0 when
    /// all later attempts are skipped too (the only case a trial produces).
    pub attempt_value: Vec<f64>,
}

/// Cross-attempt returns of one trial given the rewards of each attempt's play steps in order
/// (an empty attempt = skipped).
pub fn cross_attempt_returns(attempt_rewards: &[Vec<f64>], cfg: &ReturnConfig) -> TrialReturns {
    let n = attempt_rewards.len();
    let mut per_step = vec![Vec::new(); n];
    let mut attempt_value = vec![0.0; n];
    // Value at the start of the attempt after the current one (0 past the last attempt).
    let mut next_value = 0.0;
    for a in (0..n).rev() {
        let g = discounted_returns(&attempt_rewards[a], cfg.step_gamma);
        let len = g.len();
        let carried = cfg.traj_gamma * next_value;
        let returns: Vec<f64> = g
            .iter()
            .enumerate()
            .map(|(t, gt)| match cfg.form {
                CrossAttemptReturn::Paper => gt + carried,
                CrossAttemptReturn::ReferenceRecursion => {
                    gt + cfg.step_gamma.powi((len - 1 - t) as i32) * carried
                }
            })
            .collect();
        attempt_value[a] = returns.first().copied().unwrap_or(carried);
        next_value = attempt_value[a];
        per_step[a] = returns;
    }
    TrialReturns {
        per_step,
        attempt_value,
    }
}

/// The return of every sample, aligned with `samples`: play steps get `G_t^(n)`, a reflection
/// before attempt n gets the return of attempt n's first play step. Reflection rewards are not
/// part of any return (they are 0 by convention).
pub fn sample_returns(samples: &[StepRecord], cfg: &ReturnConfig) -> Result<Vec<f64>, AlgoError> {
    cfg.validate()?;
    let trials = layout_trials(samples)?;
    let mut out = vec![0.0; samples.len()];
    for trial in &trials {
        let rewards: Vec<Vec<f64>> = trial
            .attempts
            .iter()
            .map(|a| a.play.iter().map(|&i| samples[i].reward).collect())
            .collect();
        let r = cross_attempt_returns(&rewards, cfg);
        for (n, slots) in trial.attempts.iter().enumerate() {
            for (t, &i) in slots.play.iter().enumerate() {
                out[i] = r.per_step[n][t];
            }
            if let Some(i) = slots.reflect {
                out[i] = r.attempt_value[n];
            }
        }
    }
    Ok(out)
}

/// MAGE's differential rewards over attempt rewards `R_0..R_K`: `r~_0 = R_0`,
/// `r~_k = R_k - R_{k-1}`; they sum to the last attempt's reward.
pub fn differential_rewards(attempt_rewards: &[f64]) -> Vec<f64> {
    let mut prev = 0.0;
    attempt_rewards
        .iter()
        .map(|&r| {
            let d = r - prev;
            prev = r;
            d
        })
        .collect()
}

/// Rewrites per-sample rewards for MAGE's final-episode objective, aligned with `samples`: each
/// attempt's reward `R_k` (sum of its play rewards) is replaced by `R_k - R_prev` on its last
/// play step, with `R_prev` the previous attempt that has play steps (0 for the first), so the
/// trial's rewards still telescope to its last played attempt's reward. All other steps get 0.
pub fn mage_differential_rewards(samples: &[StepRecord]) -> Result<Vec<f64>, AlgoError> {
    let trials = layout_trials(samples)?;
    let mut out = vec![0.0; samples.len()];
    for trial in &trials {
        let mut prev = 0.0;
        for slots in &trial.attempts {
            if let Some(&last) = slots.play.last() {
                let total: f64 = slots.play.iter().map(|&i| samples[i].reward).sum();
                out[last] = total - prev;
                prev = total;
            }
        }
    }
    check_finite("differential reward", &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn within_attempt_returns_by_hand() {
        // rewards [1, 0, 2], gamma 0.5: g2 = 2, g1 = 0 + 0.5*2 = 1, g0 = 1 + 0.5*1 = 1.5
        close(&discounted_returns(&[1.0, 0.0, 2.0], 0.5), &[1.5, 1.0, 2.0]);
        assert!(discounted_returns(&[], 0.9).is_empty());
    }

    #[test]
    fn paper_form_by_hand() {
        // step_gamma 0.5, traj_gamma 0.6. Attempt 0 rewards [0, 0], attempt 1 [0, 1], attempt 2 [1].
        // g^(0) = [0, 0]; g^(1) = [0.5, 1]; g^(2) = [1].
        // V2 = 1; V1 = g0^(1) + 0.6*V2 = 0.5 + 0.6 = 1.1.
        // G^(2) = [1]; G^(1) = [0.5 + 0.6, 1 + 0.6] = [1.1, 1.6]
        // G^(0) = g^(0) + 0.6*V1 = [0.66, 0.66]
        // (check: 0.6*g0^(1) + 0.36*g0^(2) = 0.3 + 0.36 = 0.66)
        let cfg = ReturnConfig {
            step_gamma: 0.5,
            traj_gamma: 0.6,
            form: CrossAttemptReturn::Paper,
        };
        let r = cross_attempt_returns(&[vec![0.0, 0.0], vec![0.0, 1.0], vec![1.0]], &cfg);
        close(&r.per_step[0], &[0.66, 0.66]);
        close(&r.per_step[1], &[1.1, 1.6]);
        close(&r.per_step[2], &[1.0]);
        close(&r.attempt_value, &[0.66, 1.1, 1.0]);
    }

    #[test]
    fn recursion_form_by_hand() {
        // Same rewards, recursion R <- r + 0.5 R inside, R <- r + 0.6 R across.
        // Attempt 2: [1]. Crossing into attempt 1's last step: R = 1 + 0.6*1 = 1.6; step 0:
        // R = 0 + 0.5*1.6 = 0.8. Crossing into attempt 0's last step: R = 0 + 0.6*0.8 = 0.48;
        // step 0: R = 0 + 0.5*0.48 = 0.24.
        let cfg = ReturnConfig {
            step_gamma: 0.5,
            traj_gamma: 0.6,
            form: CrossAttemptReturn::ReferenceRecursion,
        };
        let r = cross_attempt_returns(&[vec![0.0, 0.0], vec![0.0, 1.0], vec![1.0]], &cfg);
        close(&r.per_step[0], &[0.24, 0.48]);
        close(&r.per_step[1], &[0.8, 1.6]);
        close(&r.per_step[2], &[1.0]);
    }

    #[test]
    fn skipped_attempts_contribute_nothing() {
        // Won in attempt 0 with reward 1 on its only step; attempts 1, 2 skipped.
        let cfg = ReturnConfig::default();
        let r = cross_attempt_returns(&[vec![1.0], vec![], vec![]], &cfg);
        close(&r.per_step[0], &[1.0]);
        close(&r.attempt_value, &[1.0, 0.0, 0.0]);
    }

    #[test]
    fn samples_get_returns_and_reflections_the_next_first_step() {
        // Trial: attempt 0 = [0, 0] (lost), reflection, attempt 1 = [0, 1] (won).
        // step 0.5, traj 0.6, paper: V1 = 0.5; G^(0) = [0.3, 0.3]; G^(1) = [0.5, 1].
        let cfg = ReturnConfig {
            step_gamma: 0.5,
            traj_gamma: 0.6,
            form: CrossAttemptReturn::Paper,
        };
        let s = vec![
            StepRecord::play("t", 7, 1, 1, "y", 1.0),
            StepRecord::reflect("t", 7, 1),
            StepRecord::play("t", 7, 0, 0, "x", 0.0),
            StepRecord::play("t", 7, 0, 1, "y", 0.0),
            StepRecord::play("t", 7, 1, 0, "x", 0.0),
        ];
        close(
            &sample_returns(&s, &cfg).unwrap(),
            &[1.0, 0.5, 0.3, 0.3, 0.5],
        );
    }

    #[test]
    fn bad_gamma_names_the_key() {
        let cfg = ReturnConfig {
            traj_gamma: 1.5,
            ..Default::default()
        };
        let err = sample_returns(&[], &cfg).unwrap_err();
        assert!(err.to_string().contains("traj_gamma"), "{err}");
    }

    #[test]
    fn differential_rewards_by_hand() {
        // R = [-10, 0, 10]: r~ = [-10, 0 - (-10), 10 - 0] = [-10, 10, 10]; sum = 10 = R_2.
        close(
            &differential_rewards(&[-10.0, 0.0, 10.0]),
            &[-10.0, 10.0, 10.0],
        );
        // Per sample: attempt 0 rewards [1, 2] (R0 = 3), attempt 1 rewards [0, 5] (R1 = 5).
        // -> attempt 0 last step gets 3, attempt 1 last step gets 5 - 3 = 2, others 0.
        let s = vec![
            StepRecord::play("t", 0, 0, 0, "a", 1.0),
            StepRecord::play("t", 0, 0, 1, "b", 2.0),
            StepRecord::reflect("t", 0, 1),
            StepRecord::play("t", 0, 1, 0, "a", 0.0),
            StepRecord::play("t", 0, 1, 1, "b", 5.0),
        ];
        close(
            &mage_differential_rewards(&s).unwrap(),
            &[0.0, 3.0, 0.0, 0.0, 2.0],
        );
    }
}
