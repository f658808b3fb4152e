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
use scheduler::{Scheduler, SchedulerConfig};

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
    // Checked before packing, which is about a token step's work.
    for (i, r) in requests.iter().enumerate() {
        sequence::validate(&format!("request {i}"), r, model.config.vocab_size)?;
    }
    let decodes = requests.iter().any(|r| r.params.max_new_tokens > 0);
    let own;
    let packed = match weights {
        Weights::Pack if decodes => {
            own = DecodeWeights::new(model)?;
            Some(&own)
        }
        Weights::Packed(w) => Some(w),
        Weights::Pack | Weights::Unpacked => None,
    };
    let config = SchedulerConfig {
        max_rows: requests.len(),
        prefill_tokens: usize::MAX,
    };
    let mut s = Scheduler::new(model, packed, tokenizer, config)?.with_awake(awake);
    let ids = requests
        .iter()
        .map(|r| s.submit(r.clone()))
        .collect::<Result<Vec<_>>>()?;
    let mut out: std::collections::HashMap<_, _> = std::collections::HashMap::new();
    while !s.is_idle() {
        out.extend(s.step()?);
    }
    ids.iter()
        .map(|id| {
            out.remove(id)
                .ok_or_else(|| ModelError::Input(format!("sequence {id} was never reported")))
        })
        .collect()
}
