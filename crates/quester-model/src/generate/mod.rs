//! Batched generation with a KV cache: ragged prompts (left padding), per-sequence sampling
//! settings and seeded RNGs, stop strings, EOS, and a temperature switch at a marker.
//!
//! Each sequence owns a ChaCha8 RNG seeded from its own `seed`, and draws exactly one number per
//! sampled token, so its samples do not depend on which other sequences share the batch (up to
//! float rounding differences between batch shapes). Generation reads the current f32 weights.
//!
//! [`generate`] submits all its requests to a [`scheduler::Scheduler`] at once and steps it
//! until idle; the scheduler also takes requests at any token step (continuous batching).

pub mod params;
mod prefill;
pub mod prefix_cache;
pub mod sampler;
pub mod scheduler;
mod sequence;

pub use params::{
    FinishReason, GenerationOutput, GenerationRequest, SamplingParams, Scaffold, TemperatureSwitch,
};

use crate::error::{ModelError, Result};
use crate::model::{DecodeWeights, Model};
use crate::tokenizer::Tokenizer;
pub(crate) use prefill::{prefill, Prefill};
use scheduler::{Scheduler, SchedulerConfig, SequenceId};
use std::collections::HashMap;

/// Generates a response for every request, all in one batch. On a CPU with AVX-512 an f32
/// model's matrices are packed for decoding first (see [`DecodeWeights`]; about the cost of
/// one decoding step);
/// callers that generate many times between weight changes keep a snapshot and call
/// [`generate_with`].
pub fn generate(
    model: &Model,
    tokenizer: &Tokenizer,
    requests: &[GenerationRequest],
) -> Result<Vec<GenerationOutput>> {
    let weights = if DecodeWeights::pays_off(model) {
        Weights::Pack
    } else {
        Weights::Unpacked
    };
    run_awake(model, weights, tokenizer, requests)
}

/// [`generate`] on a snapshot of `model`'s matrices packed earlier. The snapshot must hold
/// the model's current base weights (LoRA adapters are read from the model); an error if it
/// comes from a model of another shape.
pub fn generate_with(
    model: &Model,
    weights: &DecodeWeights,
    tokenizer: &Tokenizer,
    requests: &[GenerationRequest],
) -> Result<Vec<GenerationOutput>> {
    weights.check(model)?;
    run_awake(model, Weights::Packed(weights), tokenizer, requests)
}

/// [`run`], on the CPU with rayon's workers kept from sleeping between a token step's ops
/// ([`crate::threads::AwakeWorkers`]).
fn run_awake(
    model: &Model,
    weights: Weights<'_>,
    tokenizer: &Tokenizer,
    requests: &[GenerationRequest],
) -> Result<Vec<GenerationOutput>> {
    let awake = if model.device().is_cpu() {
        Some(crate::threads::AwakeWorkers::start())
    } else {
        None
    };
    run(model, weights, tokenizer, requests, awake.as_ref())
}

/// Where generation reads the base matrices from.
enum Weights<'a> {
    /// Pack them for this call.
    Pack,
    /// A snapshot packed earlier.
    Packed(&'a DecodeWeights),
    /// The model's own tensors (models other than f32, CPUs without AVX-512).
    Unpacked,
}

/// What the caller of [`generate_continuous`] asks for after a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Orders {
    /// New requests, each under a key of the caller's choosing (unique among live ones).
    pub submit: Vec<(u64, GenerationRequest)>,
    /// Live requests to drop (their rows are freed; they are never reported).
    pub cancel: Vec<u64>,
}

/// Tokens a running sequence added in one step (usually one), with their log-probs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The new token ids.
    pub token_ids: Vec<u32>,
    /// Their log-probs (as in [`GenerationOutput::logprobs`]).
    pub logprobs: Vec<f32>,
}

/// What one token step of [`generate_continuous_with_progress`] reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepReport {
    /// The requests that ended in this step, with their keys.
    pub finished: Vec<(u64, GenerationOutput)>,
    /// The tokens the requests still running added in this step (a streaming server sends
    /// them on before the request ends).
    pub progress: Vec<(u64, Progress)>,
}

/// Continuous generation driven by the caller: `first` is submitted, then after every token
/// step `on_step` gets the requests that ended in it (with their keys, possibly none) and
/// answers with [`Orders`]: requests to add, which join the running batch at the next step,
/// and requests to drop. Returns once nothing waits or runs. At most `limits.max_rows`
/// sequences decode at once; the rest wait. A step prefills at most `limits.prefill_tokens`
/// prompt tokens, a longer prompt a chunk of that many per step between decoding steps. `weights`: a snapshot of `model`'s matrices packed earlier
/// (see [`generate_with`]), or None to pack them for this call where that pays off.
///
/// A request's response does not depend on when it was submitted or what else runs (each
/// samples from its own seeded stream; up to float rounding between batch shapes).
pub fn generate_continuous<E: From<ModelError>>(
    model: &Model,
    weights: Option<&DecodeWeights>,
    tokenizer: &Tokenizer,
    limits: SchedulerConfig,
    first: Vec<(u64, GenerationRequest)>,
    on_step: &mut dyn FnMut(Vec<(u64, GenerationOutput)>) -> std::result::Result<Orders, E>,
) -> std::result::Result<(), E> {
    let opts = DriveOptions {
        limits,
        progress: false,
    };
    start(
        model,
        weights,
        tokenizer,
        opts,
        first,
        &mut |report: StepReport| on_step(report.finished),
    )
}

/// [`generate_continuous`] that also reports, after every step, the tokens each running
/// request added ([`StepReport::progress`]).
pub fn generate_continuous_with_progress<E: From<ModelError>>(
    model: &Model,
    weights: Option<&DecodeWeights>,
    tokenizer: &Tokenizer,
    limits: SchedulerConfig,
    first: Vec<(u64, GenerationRequest)>,
    on_step: &mut dyn FnMut(StepReport) -> std::result::Result<Orders, E>,
) -> std::result::Result<(), E> {
    let opts = DriveOptions {
        limits,
        progress: true,
    };
    start(model, weights, tokenizer, opts, first, on_step)
}

/// How [`drive`] runs: the running batch's limits, and whether each step reports the running
/// sequences' new tokens.
#[derive(Debug, Clone)]
struct DriveOptions {
    limits: SchedulerConfig,
    progress: bool,
}

/// Picks the weights and keeps the CPU workers awake around [`drive`].
fn start<E: From<ModelError>>(
    model: &Model,
    weights: Option<&DecodeWeights>,
    tokenizer: &Tokenizer,
    opts: DriveOptions,
    first: Vec<(u64, GenerationRequest)>,
    on_step: &mut dyn FnMut(StepReport) -> std::result::Result<Orders, E>,
) -> std::result::Result<(), E> {
    let weights = match weights {
        Some(w) => {
            w.check(model)?;
            Weights::Packed(w)
        }
        None if DecodeWeights::pays_off(model) => Weights::Pack,
        None => Weights::Unpacked,
    };
    let awake = if model.device().is_cpu() {
        Some(crate::threads::AwakeWorkers::start())
    } else {
        None
    };
    drive(
        model,
        weights,
        tokenizer,
        opts,
        first,
        on_step,
        awake.as_ref(),
    )
}

/// The scheduler loop of [`generate_continuous`] (and so of [`generate`]).
fn drive<E: From<ModelError>>(
    model: &Model,
    weights: Weights<'_>,
    tokenizer: &Tokenizer,
    opts: DriveOptions,
    first: Vec<(u64, GenerationRequest)>,
    on_step: &mut dyn FnMut(StepReport) -> std::result::Result<Orders, E>,
    awake: Option<&crate::threads::AwakeWorkers>,
) -> std::result::Result<(), E> {
    // Checked before packing, which is about a token step's work.
    for (key, r) in &first {
        sequence::validate(&format!("request {key}"), r, model.config.vocab_size)?;
    }
    // Packing pays for itself only when something decodes; later requests of a call that
    // started without decoding run on the model's own tensors.
    let decodes = first.iter().any(|(_, r)| r.params.max_new_tokens > 0);
    let own;
    let packed = match weights {
        Weights::Pack if decodes => {
            own = DecodeWeights::new(model)?;
            Some(&own)
        }
        Weights::Packed(w) => Some(w),
        Weights::Pack | Weights::Unpacked => None,
    };
    let mut s = Scheduler::new(model, packed, tokenizer, opts.limits.clone())?.with_awake(awake);
    let mut live = Live::default();
    live.submit(&mut s, first)?;
    while !s.is_idle() {
        let mut report = StepReport::default();
        for (id, out) in s.step()? {
            if let Some(key) = live.ended(id) {
                report.finished.push((key, out));
            }
        }
        if opts.progress {
            report.progress = live.progress(&s);
        }
        let orders = on_step(report)?;
        for key in orders.cancel {
            if let Some(id) = live.ids.remove(&key) {
                live.keys.remove(&id);
                live.reported.remove(&id);
                s.cancel(id)?;
            }
        }
        live.submit(&mut s, orders.submit)?;
    }
    if let Some(c) = s.prefix_cache_counts() {
        tracing::info!(
            hits = c.hits,
            reused_tokens = c.reused_tokens,
            prompt_tokens = c.prompt_tokens,
            evicted = c.evicted,
            "kept prompt prefixes"
        );
    }
    Ok(())
}

/// The caller's keys of the live requests and the scheduler's ids, both ways.
#[derive(Default)]
struct Live {
    keys: HashMap<SequenceId, u64>,
    ids: HashMap<u64, SequenceId>,
    /// Tokens of each running sequence already reported as progress.
    reported: HashMap<SequenceId, usize>,
}

impl Live {
    fn submit(&mut self, s: &mut Scheduler<'_>, list: Vec<(u64, GenerationRequest)>) -> Result<()> {
        for (key, r) in list {
            if self.ids.contains_key(&key) {
                return Err(ModelError::Input(format!(
                    "request key {key} is already live"
                )));
            }
            let id = s.submit(r)?;
            self.keys.insert(id, key);
            self.ids.insert(key, id);
        }
        Ok(())
    }

    /// The tokens each running sequence added since the last report.
    fn progress(&mut self, s: &Scheduler<'_>) -> Vec<(u64, Progress)> {
        let mut out = Vec::new();
        for (id, ids, lps) in s.running_tokens() {
            let Some(&key) = self.keys.get(&id) else {
                continue;
            };
            let seen = self.reported.entry(id).or_insert(0);
            if ids.len() > *seen {
                out.push((
                    key,
                    Progress {
                        token_ids: ids[*seen..].to_vec(),
                        logprobs: lps.get(*seen..).unwrap_or_default().to_vec(),
                    },
                ));
                *seen = ids.len();
            }
        }
        out
    }

    /// The key of a sequence that has ended (None for one cancelled meanwhile).
    fn ended(&mut self, id: SequenceId) -> Option<u64> {
        self.reported.remove(&id);
        let key = self.keys.remove(&id)?;
        self.ids.remove(&key);
        Some(key)
    }
}

/// "Submit all, step until idle" on a [`Scheduler`] with a row for every request: one prefill,
/// then token steps until every sequence has ended.
fn run(
    model: &Model,
    weights: Weights<'_>,
    tokenizer: &Tokenizer,
    requests: &[GenerationRequest],
    awake: Option<&crate::threads::AwakeWorkers>,
) -> Result<Vec<GenerationOutput>> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let first = (0u64..).zip(requests.iter().cloned()).collect();
    let mut out: Vec<Option<GenerationOutput>> = vec![None; requests.len()];
    drive(
        model,
        weights,
        tokenizer,
        DriveOptions {
            // A static batch: everything at once, as one prefill.
            limits: SchedulerConfig {
                max_rows: requests.len(),
                prefill_tokens: usize::MAX,
                prefix_cache_bytes: 0,
            },
            progress: false,
        },
        first,
        &mut |report| {
            for (key, o) in report.finished {
                out[key as usize] = Some(o);
            }
            Ok::<_, ModelError>(Orders::default())
        },
        awake,
    )?;
    out.into_iter()
        .enumerate()
        .map(|(i, o)| o.ok_or_else(|| ModelError::Input(format!("request {i} was never reported"))))
        .collect()
}
