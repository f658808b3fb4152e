//! From samples to advantages and losses: the bridge to quester-algos' pure functions.

use quester_algos::{
    AdvantageConfig, CrossAttemptReturn, Normalization, PolicyLossConfig, ResponseTokens,
    SampleAdvantages, StepKind, StepRecord, TokenObjective,
};

use crate::config::{AlgorithmSection, CrossAttemptForm, NormMode};
use crate::policy::LossValue;
use crate::sample::{Sample, SampleKind};

/// The algos record of a sample.
pub fn step_record(s: &Sample) -> StepRecord {
    StepRecord {
        task_key: s.task_id.clone(),
        trial_id: s.trial as u64,
        attempt: s.attempt,
        turn: s.turn,
        kind: match s.kind {
            SampleKind::Play => StepKind::Play,
            SampleKind::Reflect => StepKind::Reflect,
        },
        anchor: s.anchor.clone(),
        reward: s.reward,
        invalid: !s.valid,
        won: s.won,
    }
}

/// The advantage settings of an algorithm section.
pub fn advantage_config(a: &AlgorithmSection) -> AdvantageConfig {
    AdvantageConfig {
        estimator: a.estimator,
        normalization: match a.norm {
            NormMode::MeanNorm => Normalization::MeanNorm,
            NormMode::MeanStdNorm => Normalization::MeanStdNorm,
        },
        step_weight: a.step_advantage_weight,
        invalid_penalty: a.invalid_penalty,
        step_gamma: a.step_gamma,
        traj_gamma: a.traj_gamma,
        return_form: match a.cross_attempt {
            CrossAttemptForm::Paper => CrossAttemptReturn::Paper,
            CrossAttemptForm::Reference => CrossAttemptReturn::ReferenceRecursion,
        },
        signal: a.signal,
        ..AdvantageConfig::default()
    }
}

/// Advantages of every sample (cross-attempt returns, GiGPO / GRPO / RLOO).
pub fn advantages(
    samples: &[Sample],
    a: &AlgorithmSection,
) -> Result<SampleAdvantages, quester_algos::AlgoError> {
    let records: Vec<StepRecord> = samples.iter().map(step_record).collect();
    quester_algos::compute_advantages(&records, &advantage_config(a))
}

/// The PPO loss settings; the entropy bonus is applied model-side, so it is 0 here.
pub fn loss_config(a: &AlgorithmSection) -> PolicyLossConfig {
    PolicyLossConfig {
        clip_low: a.clip_low,
        clip_high: a.clip_high,
        dual_clip: a.dual_clip,
        entropy_coef: 0.0,
        ..PolicyLossConfig::default()
    }
}

/// The clipped PPO loss of a mini-batch and dL/dlogp, from the current log-probs. Non-finite
/// inputs give a NaN loss, which makes the policy skip the update.
pub fn ppo_loss(
    new_logp: &[Vec<f64>],
    old_logp: &[Vec<f64>],
    advantage: &[f64],
    cfg: &PolicyLossConfig,
) -> LossValue {
    let responses: Vec<ResponseTokens<'_>> = new_logp
        .iter()
        .zip(old_logp)
        .zip(advantage)
        .map(|((n, o), &adv)| ResponseTokens {
            new_logp: n,
            old_logp: o,
            ref_logp: None,
            entropy: None,
            advantage: adv,
            objective: TokenObjective::Clipped,
        })
        .collect();
    match quester_algos::policy_loss(&responses, cfg) {
        Ok(l) => LossValue {
            loss: l.loss,
            dlogp: l.grad,
        },
        Err(e) => {
            tracing::warn!("policy loss not computable: {e}");
            LossValue {
                loss: f64::NAN,
                dlogp: new_logp.iter().map(|v| vec![f64::NAN; v.len()]).collect(),
            }
        }
    }
}
