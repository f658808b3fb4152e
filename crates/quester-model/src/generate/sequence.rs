//! One sequence's decoding state and rules, shared by the static batch ([`super::generate`])
//! and the continuous one ([`super::scheduler`]): sampling from its own RNG, forced scaffold
//! tokens, the temperature switch, stop strings, EOS and `max_new_tokens`.

use super::params::{FinishReason, GenerationOutput, GenerationRequest, SamplingParams};
use super::sampler;
use crate::error::{ModelError, Result};
use crate::tokenizer::Tokenizer;
use candle_core::{DType, Tensor};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::collections::VecDeque;

/// An error for a request generation cannot run: an empty prompt, a token outside the
/// vocabulary, or sampling settings that are not numbers in range.
pub(crate) fn validate(label: &str, r: &GenerationRequest, vocab: usize) -> Result<()> {
    if r.prompt_ids.is_empty() {
        return Err(ModelError::Input(format!("{label} has an empty prompt")));
    }
    if let Some(bad) = r.prompt_ids.iter().find(|&&t| t as usize >= vocab) {
        return Err(ModelError::Input(format!(
            "{label}: token id {bad} is outside the vocabulary ({vocab})"
        )));
    }
    let p = &r.params;
    let bad_switch = p
        .temperature_switch
        .as_ref()
        .is_some_and(|s| s.temperature.is_nan() || s.temperature < 0.0);
    if p.temperature.is_nan() || p.temperature < 0.0 || p.top_p.is_nan() || p.top_p <= 0.0 {
        return Err(ModelError::Input(format!(
            "{label}: temperature must be >= 0 and top_p > 0"
        )));
    }
    if bad_switch {
        return Err(ModelError::Input(format!(
            "{label}: the switch temperature must be >= 0"
        )));
    }
    Ok(())
}

/// Per-sequence decoding state.
pub(crate) struct Sequence {
    params: SamplingParams,
    rng: ChaCha8Rng,
    temperature: f64,
    switched: bool,
    /// The scaffold's tokens when the marker is forced too, and after it.
    scaffold: Option<(Vec<u32>, Vec<u32>)>,
    /// Scaffold tokens still to force, in order, and whether the scaffold has fired.
    forced: VecDeque<u32>,
    scaffolded: bool,
    ids: Vec<u32>,
    logprobs: Vec<f32>,
    temperatures: Vec<f32>,
    finish: Option<FinishReason>,
}

impl Sequence {
    /// A sequence that has generated nothing yet (finished at once for `max_new_tokens` 0).
    pub(crate) fn new(params: &SamplingParams, tokenizer: &Tokenizer) -> Result<Self> {
        let scaffold = params
            .scaffold
            .as_ref()
            .map(|sc| {
                Ok::<_, ModelError>((
                    tokenizer.encode(&format!("{}{}", sc.marker, sc.text))?,
                    tokenizer.encode(&sc.text)?,
                ))
            })
            .transpose()?;
        Ok(Sequence {
            params: params.clone(),
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            temperature: params.temperature,
            switched: false,
            scaffold,
            forced: VecDeque::new(),
            scaffolded: false,
            ids: Vec::new(),
            logprobs: Vec::new(),
            temperatures: Vec::new(),
            finish: (params.max_new_tokens == 0).then_some(FinishReason::Length),
        })
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The tokens generated so far and their log-probs.
    pub(crate) fn tokens(&self) -> (&[u32], &[f32]) {
        (&self.ids, &self.logprobs)
    }

    /// The token the next forward pass feeds.
    pub(crate) fn last_token(&self) -> u32 {
        *self.ids.last().unwrap_or(&0)
    }

    /// Tokens this sequence may still add (a bound on the cache it needs).
    pub(crate) fn remaining(&self) -> usize {
        self.params.max_new_tokens.saturating_sub(self.ids.len())
    }

    /// Picks the next token from `logits`: a forced scaffold token, or a sample.
    fn push_token(&mut self, logits: &[f32], eos: &[u32]) {
        if self.finish.is_some() {
            return;
        }
        if let Some(tok) = self.forced.pop_front() {
            // Not sampled: no RNG draw, so the sampled tokens after it keep their stream.
            self.push_forced(logits, tok);
            return;
        }
        let p = &self.params;
        let (tok, lp) = sampler::sample(logits, self.temperature, p, &mut self.rng);
        if let Some((with_marker, _)) = self
            .scaffold
            .as_ref()
            .filter(|_| !self.scaffolded && !p.ignore_eos && eos.contains(&tok))
        {
            // The response was about to end before its scaffold: the marker and the text
            // take the place of the end-of-sequence token.
            self.forced.extend(with_marker.iter().copied());
            self.scaffolded = true;
            if let Some(f) = self.forced.pop_front() {
                self.push_forced(logits, f);
                return;
            }
        }
        self.ids.push(tok);
        self.logprobs.push(lp);
        self.temperatures.push(self.temperature as f32);
    }

    fn push_forced(&mut self, logits: &[f32], tok: u32) {
        self.ids.push(tok);
        self.logprobs.push(sampler::logprob(logits, tok));
        self.temperatures.push(0.0);
    }

    /// Checks the end conditions and the temperature switch on the decoded response.
    pub(crate) fn check_end(&mut self, tokenizer: &Tokenizer, eos: &[u32]) -> Result<()> {
        if self.finish.is_some() {
            return Ok(());
        }
        let p = &self.params;
        if !p.ignore_eos && eos.contains(&self.last_token()) {
            self.finish = Some(FinishReason::Eos);
            return Ok(());
        }
        let scaffold_due = p.scaffold.is_some() && !self.scaffolded;
        if !p.stop.is_empty() || (p.temperature_switch.is_some() && !self.switched) || scaffold_due
        {
            let text = tokenizer.decode(&self.ids)?;
            if let (Some(sc), Some((with_marker, after))) = (
                p.scaffold.as_ref().filter(|_| scaffold_due),
                self.scaffold.as_ref(),
            ) {
                if text.contains(&sc.marker) {
                    self.forced.extend(after.iter().copied());
                    self.scaffolded = true;
                } else if sc.max_tokens > 0 && self.ids.len() >= sc.max_tokens {
                    self.forced.extend(with_marker.iter().copied());
                    self.scaffolded = true;
                }
            }
            if let Some(stop) = p
                .stop
                .iter()
                .find(|st| !st.is_empty() && text.contains(st.as_str()))
            {
                self.finish = Some(FinishReason::Stop(stop.clone()));
                return Ok(());
            }
            if let Some(sw) = p.temperature_switch.as_ref().filter(|_| !self.switched) {
                if text.contains(&sw.marker) {
                    self.temperature = sw.temperature;
                    self.switched = true;
                }
            }
        }
        // The cache holds max_new_tokens: forced tokens past it are dropped.
        if self.ids.len() >= p.max_new_tokens {
            self.finish = Some(FinishReason::Length);
        }
        Ok(())
    }

    /// The finished response.
    pub(crate) fn into_output(self, tokenizer: &Tokenizer) -> Result<GenerationOutput> {
        let text_ids = match self.finish {
            Some(FinishReason::Eos) => &self.ids[..self.ids.len().saturating_sub(1)],
            _ => &self.ids[..],
        };
        Ok(GenerationOutput {
            text: tokenizer.decode(text_ids)?,
            token_ids: self.ids,
            logprobs: self.logprobs,
            temperatures: self.temperatures,
            finish_reason: self.finish.unwrap_or(FinishReason::Length),
        })
    }
}

/// One token for every sequence in `rows` (batch row of `logits` [N, vocab], its sequence),
/// sampled in parallel (each touches only its own state), then their end conditions checked.
pub(crate) fn advance(
    logits: &Tensor,
    rows: &mut [(usize, &mut Sequence)],
    tokenizer: &Tokenizer,
    eos: &[u32],
) -> Result<()> {
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
    rows.par_iter_mut()
        .for_each(|(row, s)| s.push_token(&all[*row * width..(*row + 1) * width], eos));
    drop(guard);
    for (_, s) in rows.iter_mut() {
        s.check_end(tokenizer, eos)?;
    }
    Ok(())
}
