//! Which log-probs the PPO ratio divides by: decided from what each sample records, never
//! guessed by the trainer.
//!
//! A sample's recorded behaviour log-probs are those of the distribution its tokens were drawn
//! from. They are the current policy's own log-probs in the training context only when the
//! tokens were drawn at temperature 1 from the full distribution (no top-k / top-p) and the
//! training context is the sampling context. Then (until the first update of the step) they
//! are both the ratio's denominator and the current log-probs, and no scoring pass is needed.
//! Otherwise the denominator is the current weights' untempered log-probs in the training
//! context, rescored before the step's first update (the ratio starts at 1, as in verl, which
//! recomputes `old_log_prob` with the actor), unless the sample asks to keep its behaviour
//! log-probs (an importance ratio across contexts, [`OldLogprobs::Behaviour`]).

use crate::error::TrainError;
use crate::policy::{TrainSeq, TrainablePolicy};
use crate::sample::{OldLogprobs, Sample};
use quester_algos::SamplerGap;

/// Where a sample's old log-probs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OldSource {
    /// The recorded log-probs, which are exactly the current policy's before the first update.
    RecordedExact,
    /// The recorded behaviour log-probs, kept although they are not the current policy's.
    RecordedBehaviour,
    /// A scoring pass of the current weights in the training context.
    Rescore,
}

/// The recorded log-probs are the untempered policy's in the training context.
pub(crate) fn is_on_policy_record(s: &Sample) -> bool {
    let same_context = s
        .train_prompt_ids
        .as_ref()
        .is_none_or(|ids| *ids == s.prompt_ids);
    same_context
        && !s.truncated_sampling
        && s.temperatures.len() == s.response_ids.len()
        && s.logprobs.len() == s.response_ids.len()
        && s.temperatures.iter().all(|&t| t == 1.0)
}

/// The ratio's denominators of a step's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Denominators {
    /// Per sample, per response token.
    pub old: Vec<Vec<f64>>,
    /// Whether a sample's denominators are the current weights' until the first update.
    pub current: Vec<bool>,
    /// Mean |d log p| and KL between another engine's log-probs and the trainer's rescoring,
    /// over the tokens sampled untempered from the full distribution (None: the trainer's own
    /// engine sampled, or no such token).
    pub sampler_gap: Option<SamplerGap>,
}

/// See the module doc.
pub(crate) fn old_source(s: &Sample) -> OldSource {
    match (s.old_logprobs, is_on_policy_record(s)) {
        (_, true) => OldSource::RecordedExact,
        (OldLogprobs::Behaviour, false) => OldSource::RecordedBehaviour,
        (OldLogprobs::Auto, false) => OldSource::Rescore,
    }
}

/// The ratio's denominators of every sample: the recorded log-probs where they are the
/// current policy's or the sample keeps its behaviour ones, else the current weights'
/// log-probs in the training context (one scoring pass, `mini_batch` sequences at a time, to
/// be run before any update). Also says which samples' old log-probs are the current ones
/// until the first update.
pub fn old_logprobs(
    policy: &mut dyn TrainablePolicy,
    samples: &[Sample],
    mini_batch: usize,
) -> Result<Denominators, TrainError> {
    // Another engine's log-probs are close to the trainer's, not equal: rescored, and the gap
    // between the two is logged.
    let trainers = policy.logprobs_are_trainers();
    let sources: Vec<OldSource> = samples
        .iter()
        .map(|s| match old_source(s) {
            OldSource::RecordedExact if !trainers => OldSource::Rescore,
            source => source,
        })
        .collect();
    let mut old: Vec<Vec<f64>> = samples
        .iter()
        .map(|s| s.logprobs.iter().map(|&x| f64::from(x)).collect())
        .collect();
    let rescore: Vec<usize> = (0..samples.len())
        .filter(|&i| sources[i] == OldSource::Rescore)
        .collect();
    for chunk in rescore.chunks(mini_batch.max(1)) {
        let seqs: Vec<TrainSeq<'_>> = chunk
            .iter()
            .map(|&i| TrainSeq {
                prompt_ids: samples[i].training_prompt_ids(),
                response_ids: &samples[i].response_ids,
                current_logprobs: None,
            })
            .collect();
        let scored = policy.score(&seqs)?;
        if scored.len() != chunk.len() {
            return Err(TrainError::Policy(format!(
                "rescoring {} responses returned {}",
                chunk.len(),
                scored.len()
            )));
        }
        for (&i, lp) in chunk.iter().zip(scored) {
            old[i] = lp;
        }
    }
    let sampler_gap = if trainers {
        None
    } else {
        // The gap on the samples whose records are the untempered policy's.
        let pairs = samples
            .iter()
            .zip(&old)
            .filter(|(s, _)| is_on_policy_record(s))
            .flat_map(|(s, t)| {
                s.logprobs
                    .iter()
                    .map(|&b| f64::from(b))
                    .zip(t.iter().copied())
            });
        let gap = quester_algos::sampler_gap(pairs);
        if let Some(g) = gap {
            tracing::info!(
                mean_abs_logp_gap = g.mean_abs_logp,
                kl = g.kl,
                tokens = g.tokens,
                "sampler log-probs against the trainer's rescoring"
            );
        }
        gap
    };
    if !rescore.is_empty() {
        tracing::debug!(
            rescored = rescore.len(),
            of = samples.len(),
            "behaviour log-probs rescored (tempered / truncated sampling or another context)"
        );
    }
    let current = sources
        .iter()
        .map(|&s| s != OldSource::RecordedBehaviour)
        .collect();
    Ok(Denominators {
        old,
        current,
        sampler_gap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{SampleKind, SampleRole};

    fn sample(temps: &[f32]) -> Sample {
        Sample {
            task_id: "t".into(),
            task_seed: 0,
            trial: 0,
            opponent: String::new(),
            attempt: 0,
            turn: 0,
            kind: SampleKind::Play,
            anchor: String::new(),
            reward: 0.0,
            score_adjustment: 0.0,
            role: SampleRole::Policy,
            valid: true,
            won: false,
            attempt_won: false,
            prompt: String::new(),
            response: String::new(),
            prompt_ids: vec![1, 2, 3],
            train_prompt_ids: None,
            response_ids: vec![7; temps.len()],
            logprobs: vec![-0.5; temps.len()],
            temperatures: temps.to_vec(),
            truncated_sampling: false,
            old_logprobs: OldLogprobs::Auto,
        }
    }

    #[test]
    fn untempered_full_distribution_same_context_is_exact() {
        assert_eq!(old_source(&sample(&[1.0, 1.0])), OldSource::RecordedExact);
        // The same ids given explicitly as the training context are still the same context.
        let mut s = sample(&[1.0]);
        s.train_prompt_ids = Some(vec![1, 2, 3]);
        assert_eq!(old_source(&s), OldSource::RecordedExact);
    }

    #[test]
    fn any_tempered_token_truncation_or_other_context_is_rescored() {
        // One token at T = 0.7 (a hot strategy segment then a cool action, say) is enough.
        assert_eq!(old_source(&sample(&[1.0, 0.7])), OldSource::Rescore);
        // Greedy tokens are recorded at temperature 0.
        assert_eq!(old_source(&sample(&[0.0])), OldSource::Rescore);
        let mut s = sample(&[1.0]);
        s.truncated_sampling = true;
        assert_eq!(old_source(&s), OldSource::Rescore);
        let mut s = sample(&[1.0]);
        s.train_prompt_ids = Some(vec![1, 3]);
        assert_eq!(old_source(&s), OldSource::Rescore);
        // Temperatures not recorded per token: not provably exact.
        let mut s = sample(&[1.0, 1.0]);
        s.temperatures.pop();
        assert_eq!(old_source(&s), OldSource::Rescore);
    }

    #[test]
    fn behaviour_is_kept_only_when_asked() {
        let mut s = sample(&[1.0]);
        s.train_prompt_ids = Some(vec![9]);
        s.old_logprobs = OldLogprobs::Behaviour;
        assert_eq!(old_source(&s), OldSource::RecordedBehaviour);
        // On-policy records stay exact whatever is asked.
        let mut s = sample(&[1.0]);
        s.old_logprobs = OldLogprobs::Behaviour;
        assert_eq!(old_source(&s), OldSource::RecordedExact);
    }
}
