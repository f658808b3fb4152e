//! From samples to advantages in one call: rewards -> (MAGE differential rewards) -> returns and
//! episode scores -> GiGPO / GRPO / RLOO, as configured.

use crate::advantage::anchor::cluster_anchors;
use crate::advantage::broadcast::broadcast_to_steps;
use crate::advantage::gigpo::gigpo_advantages;
use crate::advantage::group::group_indices;
use crate::advantage::grpo::grpo_advantages;
use crate::advantage::normalize::Normalization;
use crate::advantage::penalty::penalized_score;
use crate::advantage::rloo::rloo_advantages;
use crate::error::AlgoError;
use crate::returns::{mage_differential_rewards, sample_returns, CrossAttemptReturn, ReturnConfig};
use crate::sample::{StepKind, StepRecord};
use crate::trial::{layout_trials, TrialSlots};
use serde::{Deserialize, Serialize};

/// Which advantage estimator to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Estimator {
    /// Episode advantage + `step_weight` x anchor-step advantage (LaMer's base algorithm).
    #[default]
    Gigpo,
    /// Group-normalised `signal` within the task group.
    Grpo,
    /// `signal` minus the leave-one-out mean of the task group.
    Rloo,
}

/// The per-sample value GRPO and RLOO compare within a task group (GiGPO ignores it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// The sample's cross-attempt return G (what LaMer's GRPO must use; `traj_gamma` matters),
    /// minus the invalid penalty of the sample.
    #[default]
    Return,
    /// The undiscounted reward of the sample's attempt minus its invalid penalty (0 minus the
    /// penalty for reflections).
    EpisodeScore,
    /// One value per trial: all its play rewards minus the penalty per invalid sample,
    /// normalised across the trials of the task group (each trial counted once), then
    /// broadcast to every sample of the trial (EMPO2).
    TrialScore,
}

/// Advantage settings. Defaults are LaMer's (Sokoban script): GiGPO, `mean_norm`, w = 1,
/// penalty 0.5, step_gamma 0.95, traj_gamma 0.9, the paper's return form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdvantageConfig {
    pub estimator: Estimator,
    pub normalization: Normalization,
    /// GiGPO's weight w of the step advantage.
    pub step_weight: f64,
    /// Added to the std before dividing (`mean_std_norm`).
    pub epsilon: f64,
    /// Subtracted from the score of each invalid sample.
    pub invalid_penalty: f64,
    pub step_gamma: f64,
    pub traj_gamma: f64,
    pub return_form: CrossAttemptReturn,
    /// GRPO / RLOO only: what is compared.
    pub signal: Signal,
    /// MAGE: replace rewards by differential attempt rewards before anything else.
    pub differential_rewards: bool,
    /// GiGPO: anchors of one task group with similarity >= this share a step group
    /// ([`crate::advantage::anchor_similarity`]); 1 = equal anchors only (the default).
    pub anchor_similarity: f64,
}

impl Default for AdvantageConfig {
    fn default() -> Self {
        let r = ReturnConfig::default();
        AdvantageConfig {
            estimator: Estimator::Gigpo,
            normalization: Normalization::MeanNorm,
            step_weight: 1.0,
            epsilon: 1e-6,
            invalid_penalty: 0.5,
            step_gamma: r.step_gamma,
            traj_gamma: r.traj_gamma,
            return_form: r.form,
            signal: Signal::Return,
            differential_rewards: false,
            anchor_similarity: 1.0,
        }
    }
}

impl AdvantageConfig {
    /// The return settings held in this config.
    pub fn returns(&self) -> ReturnConfig {
        ReturnConfig {
            step_gamma: self.step_gamma,
            traj_gamma: self.traj_gamma,
            form: self.return_form,
        }
    }

    /// Checks every numeric field, naming the bad key.
    pub fn validate(&self) -> Result<(), AlgoError> {
        self.returns().validate()?;
        let bad = |key: &str, v: f64, allowed: &str| AlgoError::Config {
            key: key.into(),
            value: v.to_string(),
            allowed: allowed.into(),
        };
        if !(self.epsilon >= 0.0 && self.epsilon.is_finite()) {
            return Err(bad("epsilon", self.epsilon, "a finite number >= 0"));
        }
        if !self.step_weight.is_finite() {
            return Err(bad("step_weight", self.step_weight, "a finite number"));
        }
        if !(self.anchor_similarity > 0.0 && self.anchor_similarity <= 1.0) {
            return Err(bad(
                "anchor_similarity",
                self.anchor_similarity,
                "a number in (0, 1]",
            ));
        }
        if !self.invalid_penalty.is_finite() {
            return Err(bad(
                "invalid_penalty",
                self.invalid_penalty,
                "a finite number",
            ));
        }
        Ok(())
    }
}

/// Per-sample results, aligned with the input samples; the parts are kept for logging.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleAdvantages {
    /// The advantage to train with.
    pub advantage: Vec<f64>,
    /// The rewards used (the input rewards, or MAGE's differential rewards).
    pub rewards: Vec<f64>,
    /// Cross-attempt returns G.
    pub returns: Vec<f64>,
    /// Episode scores after the invalid penalty.
    pub scores: Vec<f64>,
    /// GiGPO's episode part (equal to `advantage` for GRPO / RLOO).
    pub episode: Vec<f64>,
    /// GiGPO's step part (0 for GRPO / RLOO).
    pub step: Vec<f64>,
}

/// The step-group key of a sample within its task group: its anchor cluster, or the one shared
/// key of all reflections of the task (an enum, so no anchor can collide with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum StepAnchor {
    /// Anchor cluster id, unique within the task group.
    Cluster(usize),
    Reflection,
}

/// The anchor cluster of every play sample within its task group (reflections get 0, unused).
fn anchor_clusters(samples: &[StepRecord], threshold: f64) -> Vec<usize> {
    let mut out = vec![0; samples.len()];
    let keys: Vec<&str> = samples.iter().map(|s| s.task_key.as_str()).collect();
    for group in group_indices(&keys) {
        let play: Vec<usize> = group
            .into_iter()
            .filter(|&i| samples[i].kind == StepKind::Play)
            .collect();
        let anchors: Vec<&str> = play.iter().map(|&i| samples[i].anchor.as_str()).collect();
        for (&i, c) in play.iter().zip(cluster_anchors(&anchors, threshold)) {
            out[i] = c;
        }
    }
    out
}

/// Computes advantages for a batch of samples (any order; several tasks and trials mixed).
pub fn compute_advantages(
    samples: &[StepRecord],
    cfg: &AdvantageConfig,
) -> Result<SampleAdvantages, AlgoError> {
    cfg.validate()?;
    let rewards: Vec<f64> = if cfg.differential_rewards {
        mage_differential_rewards(samples)?
    } else {
        samples.iter().map(|s| s.reward).collect()
    };
    let shaped: Vec<StepRecord> = samples
        .iter()
        .zip(&rewards)
        .map(|(s, &r)| StepRecord {
            reward: r,
            ..s.clone()
        })
        .collect();
    let returns = sample_returns(&shaped, &cfg.returns())?;
    let trials = layout_trials(&shaped)?;

    // Episode score: the undiscounted reward of the sample's own attempt; 0 for reflections.
    let mut scores = vec![0.0; samples.len()];
    for trial in &trials {
        for slots in &trial.attempts {
            let total: f64 = slots.play.iter().map(|&i| rewards[i]).sum();
            for &i in &slots.play {
                scores[i] = total;
            }
        }
    }
    for (score, s) in scores.iter_mut().zip(samples) {
        *score = penalized_score(*score, s.invalid, cfg.invalid_penalty) - s.score_penalty;
    }

    let task_keys: Vec<&str> = samples.iter().map(|s| s.task_key.as_str()).collect();
    let (episode, step, advantage) = match cfg.estimator {
        Estimator::Gigpo => {
            let clusters = anchor_clusters(samples, cfg.anchor_similarity);
            let anchors: Vec<StepAnchor> = samples
                .iter()
                .zip(&clusters)
                .map(|(s, &c)| match s.kind {
                    StepKind::Play => StepAnchor::Cluster(c),
                    StepKind::Reflect => StepAnchor::Reflection,
                })
                .collect();
            let g = gigpo_advantages(
                &task_keys,
                &scores,
                &anchors,
                &returns,
                cfg.step_weight,
                cfg.normalization,
                cfg.epsilon,
            )?;
            (g.episode, g.step, g.total)
        }
        Estimator::Grpo | Estimator::Rloo => {
            let trial_ids: Vec<u64> = samples.iter().map(|s| s.trial_id).collect();
            let a = match cfg.signal {
                Signal::Return => {
                    let values: Vec<f64> = returns
                        .iter()
                        .zip(samples)
                        .map(|(&g, s)| {
                            penalized_score(g, s.invalid, cfg.invalid_penalty) - s.score_penalty
                        })
                        .collect();
                    relative(cfg, &task_keys, &trial_ids, &values)?
                }
                Signal::EpisodeScore => relative(cfg, &task_keys, &trial_ids, &scores)?,
                Signal::TrialScore => trial_score_advantages(samples, &rewards, &trials, cfg)?,
            };
            let zeros = vec![0.0; samples.len()];
            (a.clone(), zeros, a)
        }
    };
    Ok(SampleAdvantages {
        advantage,
        rewards,
        returns,
        scores,
        episode,
        step,
    })
}

/// EMPO2: one value per trial (play rewards minus the penalty per invalid sample), compared
/// across the trials of its task group, then broadcast to every sample of the trial.
fn trial_score_advantages(
    samples: &[StepRecord],
    rewards: &[f64],
    trials: &[TrialSlots],
    cfg: &AdvantageConfig,
) -> Result<Vec<f64>, AlgoError> {
    let mut unit_of_sample = vec![0; samples.len()];
    let mut unit_keys = Vec::with_capacity(trials.len());
    let mut unit_values = Vec::with_capacity(trials.len());
    for (u, trial) in trials.iter().enumerate() {
        let mut value = 0.0;
        for slots in &trial.attempts {
            for &i in slots.play.iter().chain(slots.reflect.iter()) {
                unit_of_sample[i] = u;
                let reward = match samples[i].kind {
                    StepKind::Play => rewards[i],
                    StepKind::Reflect => 0.0,
                };
                value += penalized_score(reward, samples[i].invalid, cfg.invalid_penalty)
                    - samples[i].score_penalty;
            }
        }
        unit_keys.push(trial.task_key.as_str());
        unit_values.push(value);
    }
    let units: Vec<u64> = (0..unit_keys.len() as u64).collect();
    let per_trial = relative(cfg, &unit_keys, &units, &unit_values)?;
    broadcast_to_steps(&unit_of_sample, &per_trial)
}

/// GRPO or RLOO of `values` within groups of equal `keys`.
/// `rollouts[i]` names the rollout (trial) of value i: RLOO leaves out whole rollouts.
fn relative(
    cfg: &AdvantageConfig,
    keys: &[&str],
    rollouts: &[u64],
    values: &[f64],
) -> Result<Vec<f64>, AlgoError> {
    match cfg.estimator {
        Estimator::Rloo => rloo_advantages(keys, rollouts, values),
        _ => grpo_advantages(keys, values, cfg.normalization, cfg.epsilon),
    }
}
