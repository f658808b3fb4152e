//! Batched generation with a KV cache: ragged prompts (left padding), per-sequence sampling
//! settings and seeded RNGs, stop strings, EOS, and a temperature switch at a marker.
//!
//! Each sequence owns a ChaCha8 RNG seeded from its own `seed`, and draws exactly one number per
//! sampled token, so its samples do not depend on which other sequences share the batch (up to
//! float rounding differences between batch shapes). Generation reads the current f32 weights.

pub mod params;
pub mod sampler;
pub mod scheduler;
mod sequence;

pub use params::{
    FinishReason, GenerationOutput, GenerationRequest, SamplingParams, Scaffold, TemperatureSwitch,
};

use crate::error::Result;
use crate::model::{DecodeWeights, KvCache, Model};
use crate::tokenizer::Tokenizer;
use candle_core::Tensor;
use sequence::Sequence;

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
    for (i, r) in requests.iter().enumerate() {
        sequence::validate(&format!("request {i}"), r, model.config.vocab_size)?;
    }
    let eos = tokenizer.eos_ids().to_vec();
    let max_prompt = requests
        .iter()
        .map(|r| r.prompt_ids.len())
        .max()
        .unwrap_or(0);
    let max_new = requests
        .iter()
        .map(|r| r.params.max_new_tokens)
        .max()
        .unwrap_or(0);
    let mut states: Vec<Sequence> = requests
        .iter()
        .map(|r| Sequence::new(&r.params, tokenizer))
        .collect::<Result<_>>()?;
    if max_new == 0 {
        return finish_all(tokenizer, states);
    }
    let own;
    let packed = match weights {
        Weights::Pack => {
            own = DecodeWeights::new(model)?;
            Some(&own)
        }
        Weights::Packed(w) => Some(w),
        Weights::Unpacked => None,
    };
    let prompts: Vec<&[u32]> = requests.iter().map(|r| r.prompt_ids.as_slice()).collect();
    let Prefill {
        mut cache,
        mut logits,
        mut key_mask,
    } = prefill(model, packed, &prompts, max_prompt + max_new)?;
    let mut rows: Vec<usize> = (0..requests.len()).collect(); // batch row -> index into `states`
    let mut real: Vec<u32> = requests.iter().map(|r| r.prompt_ids.len() as u32).collect();
    loop {
        if let Some(a) = awake {
            a.rearm();
        }
        let mut row_states: Vec<(usize, &mut Sequence)> = Vec::new();
        {
            let mut by_idx: Vec<Option<&mut Sequence>> = states.iter_mut().map(Some).collect();
            for (row, &si) in rows.iter().enumerate() {
                if let Some(s) = by_idx[si].take() {
                    row_states.push((row, s));
                }
            }
        }
        sequence::advance(&logits, &mut row_states, tokenizer, &eos)?;
        drop(row_states);
        let live: Vec<usize> = (0..rows.len())
            .filter(|&r| !states[rows[r]].is_finished())
            .collect();
        if live.is_empty() {
            break;
        }
        // Drop finished rows from the batch once a quarter of it is dead (a compaction copies
        // the whole cache, so it is amortised over several finishes).
        if (rows.len() - live.len()) * 4 >= rows.len() {
            let keep = Tensor::from_vec(
                live.iter().map(|&r| r as u32).collect::<Vec<_>>(),
                live.len(),
                model.device(),
            )?;
            cache.select_rows(&keep)?;
            rows = live.iter().map(|&r| rows[r]).collect();
            key_mask = live.iter().map(|&r| key_mask[r].clone()).collect();
            real = live.iter().map(|&r| real[r]).collect();
        }
        let next: Vec<u32> = rows.iter().map(|&si| states[si].last_token()).collect();
        for m in &mut key_mask {
            m.push(1);
        }
        let n = rows.len();
        let step = Tensor::from_vec(next, (n, 1), model.device())?;
        logits = model.forward_cached_with(&step, &key_mask, &real, &mut cache, packed)?;
        for r in &mut real {
            *r += 1;
        }
    }
    finish_all(tokenizer, states)
}

/// A batch of prompts run through the model: its cache, the logits of each prompt's last
/// token [B, vocab], and each row's key mask over the cache.
pub(crate) struct Prefill {
    pub(crate) cache: KvCache,
    pub(crate) logits: Tensor,
    pub(crate) key_mask: Vec<Vec<u32>>,
}

/// Runs `prompts` (each at least one token) into a new cache of `capacity` positions.
/// Prompts that start alike (a group's trials of one task) share those tokens: they run once,
/// as a batch of one, and every row's cache starts with their keys and values. The rest of
/// each prompt is left-padded to the longest rest after them, so every prompt ends at the
/// cache's last position.
pub(crate) fn prefill(
    model: &Model,
    packed: Option<&DecodeWeights>,
    prompts: &[&[u32]],
    capacity: usize,
) -> Result<Prefill> {
    let b = prompts.len();
    let max_prompt = prompts.iter().map(|p| p.len()).max().unwrap_or(0);
    let shared = shared_prompt_prefix(prompts);
    let mut cache = model.new_cache(b, capacity.max(max_prompt))?;
    if shared > 0 {
        let mut one = model.new_cache(1, shared)?;
        let prefix = Tensor::from_vec(prompts[0][..shared].to_vec(), (1, shared), model.device())?;
        model.forward_cached_with(&prefix, &[vec![1; shared]], &[0], &mut one, packed)?;
        cache.fill_prefix(&one)?;
    }
    let max_rest = max_prompt - shared;
    let mut ids = Vec::with_capacity(b * max_rest);
    let mut key_mask = Vec::with_capacity(b);
    for p in prompts {
        let rest = &p[shared..];
        let pad = max_rest - rest.len();
        ids.extend(std::iter::repeat_n(0u32, pad));
        ids.extend_from_slice(rest);
        let mut m = vec![1u32; shared];
        m.extend(std::iter::repeat_n(0u32, pad));
        m.extend(std::iter::repeat_n(1u32, rest.len()));
        key_mask.push(m);
    }
    let ids = Tensor::from_vec(ids, (b, max_rest), model.device())?;
    let past = vec![shared as u32; b];
    let logits = model.forward_cached_with(&ids, &key_mask, &past, &mut cache, packed)?;
    Ok(Prefill {
        cache,
        logits,
        key_mask,
    })
}

/// Leading prompt tokens that every request has in common, when there are enough of them to be
/// worth running once (0 otherwise); each prompt keeps at least one token of its own, whose
/// logits start its response.
fn shared_prompt_prefix(prompts: &[&[u32]]) -> usize {
    let shortest = prompts.iter().map(|p| p.len()).min().unwrap_or(0);
    crate::model::shared_prefix_len(prompts, shortest.saturating_sub(1))
}

fn finish_all(tokenizer: &Tokenizer, states: Vec<Sequence>) -> Result<Vec<GenerationOutput>> {
    states
        .into_iter()
        .map(|s| s.into_output(tokenizer))
        .collect()
}
