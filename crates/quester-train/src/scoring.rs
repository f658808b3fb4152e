//! From samples to advantages and losses: the bridge to quester-algos' pure functions.

use quester_algos::{
    AdvantageConfig, PolicyLossConfig, ResponseTokens, SampleAdvantages, StepKind, StepRecord,
    TokenObjective,
};

use crate::policy::LossValue;
use crate::sample::{Sample, SampleKind, SampleRole};

/// The algos record of a sample.
pub(crate) fn step_record(s: &Sample) -> StepRecord {
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
        // A bonus is a negative penalty on the same episode term.
        score_penalty: -s.score_adjustment,
    }
}

/// Advantages of every sample (cross-attempt returns, GiGPO / GRPO / RLOO) with a method's
/// advantage settings.
pub(crate) fn advantages(
    samples: &[Sample],
    cfg: &AdvantageConfig,
) -> Result<SampleAdvantages, quester_algos::AlgoError> {
    let records: Vec<StepRecord> = samples.iter().map(step_record).collect();
    quester_algos::compute_advantages(&records, cfg)
}

/// The objective a sample's tokens are trained with.
pub(crate) fn objective(s: &Sample) -> TokenObjective {
    match s.role {
        SampleRole::Hindsight => TokenObjective::Hindsight,
        _ => TokenObjective::Clipped,
    }
}

/// The PPO loss settings of `[algorithm.loss]` as the loss function takes them: the entropy
/// bonus is applied model-side, so it is 0 here.
pub(crate) fn loss_config(loss: &PolicyLossConfig) -> PolicyLossConfig {
    PolicyLossConfig {
        entropy_coef: 0.0,
        ..loss.clone()
    }
}

/// The clipped PPO loss of a mini-batch (plus `kl_coef` times the KL to the reference when
/// `ref_logp` is given; each token's policy term times its `is_weight`, TIS) and dL/dlogp, from the current log-probs. Non-finite inputs give a NaN
/// loss, which makes the policy skip the update. Also returns the aggregated KL estimate (0
/// without a reference, NaN when the loss is not computable).
pub(crate) fn ppo_loss(
    new_logp: &[Vec<f64>],
    old_logp: &[Vec<f64>],
    ref_logp: Option<&[Vec<f64>]>,
    is_weight: Option<&[Vec<f64>]>,
    advantage: &[f64],
    objectives: &[TokenObjective],
    cfg: &PolicyLossConfig,
) -> (LossValue, f64) {
    let responses: Vec<ResponseTokens<'_>> = new_logp
        .iter()
        .zip(old_logp)
        .zip(advantage)
        .enumerate()
        .map(|(i, ((n, o), &adv))| ResponseTokens {
            new_logp: n,
            old_logp: o,
            ref_logp: ref_logp.and_then(|r| r.get(i)).map(Vec::as_slice),
            entropy: None,
            is_weight: is_weight.and_then(|w| w.get(i)).map(Vec::as_slice),
            advantage: adv,
            objective: objectives.get(i).copied().unwrap_or_default(),
        })
        .collect();
    match quester_algos::policy_loss(&responses, cfg) {
        Ok(l) => (
            LossValue {
                loss: l.loss,
                dlogp: l.grad,
            },
            l.stats.kl,
        ),
        Err(e) => {
            tracing::warn!("policy loss not computable: {e}");
            let lv = LossValue {
                loss: f64::NAN,
                dlogp: new_logp.iter().map(|v| vec![f64::NAN; v.len()]).collect(),
            };
            (lv, f64::NAN)
        }
    }
}
