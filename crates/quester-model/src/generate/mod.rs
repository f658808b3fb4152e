//! Batched generation with a KV cache: ragged prompts (left padding), per-sequence sampling
//! settings and seeded RNGs, stop strings, EOS, and a temperature switch at a marker.
//!
//! Each sequence owns a ChaCha8 RNG seeded from its own `seed`, and draws exactly one number per
//! sampled token, so its samples do not depend on which other sequences share the batch (up to
//! float rounding differences between batch shapes). Generation reads the current f32 weights.

pub mod params;
pub mod sampler;

pub use params::{
    FinishReason, GenerationOutput, GenerationRequest, SamplingParams, Scaffold, TemperatureSwitch,
};

use crate::error::{ModelError, Result};
use crate::model::{DecodeWeights, Model};
use crate::tokenizer::Tokenizer;
use candle_core::{DType, Tensor};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Per-sequence decoding state.
struct SeqState {
    request: usize,
    rng: ChaCha8Rng,
    temperature: f64,
    switched: bool,
    /// Scaffold tokens still to force, in order, and whether the scaffold has fired.
    forced: std::collections::VecDeque<u32>,
    scaffolded: bool,
    ids: Vec<u32>,
    logprobs: Vec<f32>,
    temperatures: Vec<f32>,
    finish: Option<FinishReason>,
}

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
        if r.prompt_ids.is_empty() {
            return Err(ModelError::Input(format!(
                "request {i} has an empty prompt"
            )));
        }
        if r.params.temperature.is_nan()
            || r.params.temperature < 0.0
            || r.params.top_p.is_nan()
            || r.params.top_p <= 0.0
        {
            return Err(ModelError::Input(format!(
                "request {i}: temperature must be >= 0 and top_p > 0"
            )));
        }
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
    let mut states: Vec<SeqState> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| SeqState {
            request: i,
            rng: ChaCha8Rng::seed_from_u64(r.params.seed),
            temperature: r.params.temperature,
            switched: false,
            forced: std::collections::VecDeque::new(),
            scaffolded: false,
            ids: Vec::new(),
            logprobs: Vec::new(),
            temperatures: Vec::new(),
            finish: if r.params.max_new_tokens == 0 {
                Some(FinishReason::Length)
            } else {
                None
            },
        })
        .collect();
    if max_new == 0 {
        return finish_all(tokenizer, states);
    }
    // Per request: the scaffold's tokens when the marker is forced too, and after it.
    let scaffolds: Vec<Option<(Vec<u32>, Vec<u32>)>> = requests
        .iter()
        .map(|r| {
            r.params
                .scaffold
                .as_ref()
                .map(|sc| {
                    Ok::<_, ModelError>((
                        tokenizer.encode(&format!("{}{}", sc.marker, sc.text))?,
                        tokenizer.encode(&sc.text)?,
                    ))
                })
                .transpose()
        })
        .collect::<Result<_>>()?;
    let own;
    let packed = match weights {
        Weights::Pack => {
            own = DecodeWeights::new(model)?;
            Some(&own)
        }
        Weights::Packed(w) => Some(w),
        Weights::Unpacked => None,
    };
    // Prefill. Prompts that start alike (a group's trials of one task) share those tokens:
    // they run once, as a batch of one, and every row's cache starts with their keys and
    // values. The rest of each prompt is left-padded to the longest rest after them.
    let b = requests.len();
    let shared = shared_prompt_prefix(requests);
    let mut cache = model.new_cache(b, max_prompt + max_new)?;
    if shared > 0 {
        let mut one = model.new_cache(1, shared)?;
        let prefix = Tensor::from_vec(
            requests[0].prompt_ids[..shared].to_vec(),
            (1, shared),
            model.device(),
        )?;
        model.forward_cached_with(&prefix, &[vec![1; shared]], &[0], &mut one, packed)?;
        cache.fill_prefix(&one)?;
    }
    let max_rest = max_prompt - shared;
    let mut ids = Vec::with_capacity(b * max_rest);
    let mut key_mask = Vec::with_capacity(b);
    for r in requests {
        let rest = &r.prompt_ids[shared..];
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
    let mut logits = model.forward_cached_with(&ids, &key_mask, &past, &mut cache, packed)?;
    let mut rows: Vec<usize> = (0..b).collect(); // batch row -> index into `states`
    let mut real: Vec<u32> = requests.iter().map(|r| r.prompt_ids.len() as u32).collect();
    loop {
        if let Some(a) = awake {
            a.rearm();
        }
        // The logits' rows read in place from an f32 CPU tensor (a copy of the batch's logits,
        // 6 MB at 32 rows of the default model, was a serial pass a token step), copied to
        // the host otherwise.
        let (n_rows, width) = logits.dims2()?;
        let lg_t = logits.to_dtype(DType::F32)?.contiguous()?;
        let host: Vec<f32>;
        // Only a CPU tensor is locked here (the copy below takes its own lock).
        let guard = lg_t.device().is_cpu().then(|| lg_t.storage_and_layout());
        let all: &[f32] = match guard.as_ref().map(|(st, l)| (&**st, l.start_offset())) {
            Some((candle_core::Storage::Cpu(candle_core::CpuStorage::F32(x)), at))
                if x.len() >= at + n_rows * width =>
            {
                &x[at..at + n_rows * width]
            }
            _ => {
                host = lg_t.flatten_all()?.to_vec1::<f32>()?;
                &host
            }
        };
        let lg = |r: usize| &all[r * width..(r + 1) * width];
        // Sample every live row in parallel; each row touches only its own state.
        let mut row_states: Vec<(usize, &mut SeqState)> = Vec::new();
        {
            let mut by_idx: Vec<Option<&mut SeqState>> = states.iter_mut().map(Some).collect();
            for (row, &si) in rows.iter().enumerate() {
                if let Some(s) = by_idx[si].take() {
                    row_states.push((row, s));
                }
            }
        }
        row_states.par_iter_mut().for_each(|(row, s)| {
            if s.finish.is_some() {
                return;
            }
            let p = &requests[s.request].params;
            if let Some(tok) = s.forced.pop_front() {
                // Not sampled: no RNG draw, so the sampled tokens after it keep their stream.
                s.ids.push(tok);
                s.logprobs.push(sampler::logprob(lg(*row), tok));
                s.temperatures.push(0.0);
                return;
            }
            let (tok, lp) = sampler::sample(lg(*row), s.temperature, p, &mut s.rng);
            if let Some((with_marker, _)) = scaffolds[s.request]
                .as_ref()
                .filter(|_| !s.scaffolded && !p.ignore_eos && eos.contains(&tok))
            {
                // The response was about to end before its scaffold: the marker and the text
                // take the place of the end-of-sequence token.
                s.forced.extend(with_marker.iter().copied());
                s.scaffolded = true;
                if let Some(f) = s.forced.pop_front() {
                    s.ids.push(f);
                    s.logprobs.push(sampler::logprob(lg(*row), f));
                    s.temperatures.push(0.0);
                    return;
                }
            }
            s.ids.push(tok);
            s.logprobs.push(lp);
            s.temperatures.push(s.temperature as f32);
        });
        drop(row_states);
        // Check the end conditions and the temperature switch on the decoded response.
        for &si in &rows {
            let s = &mut states[si];
            if s.finish.is_some() {
                continue;
            }
            let p = &requests[s.request].params;
            let last = *s.ids.last().unwrap_or(&0);
            if !p.ignore_eos && eos.contains(&last) {
                s.finish = Some(FinishReason::Eos);
                continue;
            }
            let scaffold_due = p.scaffold.is_some() && !s.scaffolded;
            if !p.stop.is_empty() || (p.temperature_switch.is_some() && !s.switched) || scaffold_due
            {
                let text = tokenizer.decode(&s.ids)?;
                if let (Some(sc), Some((with_marker, after))) = (
                    p.scaffold.as_ref().filter(|_| scaffold_due),
                    scaffolds[s.request].as_ref(),
                ) {
                    if text.contains(&sc.marker) {
                        s.forced.extend(after.iter().copied());
                        s.scaffolded = true;
                    } else if sc.max_tokens > 0 && s.ids.len() >= sc.max_tokens {
                        s.forced.extend(with_marker.iter().copied());
                        s.scaffolded = true;
                    }
                }
                if let Some(stop) = p
                    .stop
                    .iter()
                    .find(|st| !st.is_empty() && text.contains(st.as_str()))
                {
                    s.finish = Some(FinishReason::Stop(stop.clone()));
                    continue;
                }
                if let Some(sw) = p.temperature_switch.as_ref().filter(|_| !s.switched) {
                    if text.contains(&sw.marker) {
                        s.temperature = sw.temperature;
                        s.switched = true;
                    }
                }
            }
            // The cache holds max_new_tokens: forced tokens past it are dropped.
            if s.ids.len() >= p.max_new_tokens {
                s.finish = Some(FinishReason::Length);
            }
        }
        let live: Vec<usize> = (0..rows.len())
            .filter(|&r| states[rows[r]].finish.is_none())
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
        let next: Vec<u32> = rows
            .iter()
            .map(|&si| *states[si].ids.last().unwrap_or(&0))
            .collect();
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

/// Leading prompt tokens that every request has in common, when there are enough of them to be
/// worth running once (0 otherwise); each prompt keeps at least one token of its own, whose
/// logits start its response.
fn shared_prompt_prefix(requests: &[GenerationRequest]) -> usize {
    let prompts: Vec<&[u32]> = requests.iter().map(|r| r.prompt_ids.as_slice()).collect();
    let shortest = prompts.iter().map(|p| p.len()).min().unwrap_or(0);
    crate::model::shared_prefix_len(&prompts, shortest.saturating_sub(1))
}

fn finish_all(tokenizer: &Tokenizer, states: Vec<SeqState>) -> Result<Vec<GenerationOutput>> {
    states
        .into_iter()
        .map(|s| {
            let text_ids = match s.finish {
                Some(FinishReason::Eos) => &s.ids[..s.ids.len().saturating_sub(1)],
                _ => &s.ids[..],
            };
            Ok(GenerationOutput {
                text: tokenizer.decode(text_ids)?,
                token_ids: s.ids,
                logprobs: s.logprobs,
                temperatures: s.temperatures,
                finish_reason: s.finish.unwrap_or(FinishReason::Length),
            })
        })
        .collect()
}
