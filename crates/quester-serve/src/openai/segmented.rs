//! One response sampled on a server in segments, so that the rules the native engine applies
//! inside a response also hold on servers that know nothing of them: SGE's temperature switch
//! (the tokens after a marker at another temperature) and its scaffold (text forced after a
//! marker, or the marker and the text forced when the response would end or run too long
//! without it). Each segment is a request that stops at the next marker; what the rule then
//! does happens here, and the next segment continues from the prompt plus every token so far.
//! A response without such rules is one segment: one request, as before.
//!
//! Forced tokens are recorded at temperature 0 with log-prob 0 (a server does not score text it
//! did not sample): the trainer rescores every sample with such tokens, and TIS weighs them 1.

use std::sync::Arc;

use quester_train::policy::{Generation, SamplingParams, TextCodec};
use quester_train::TrainError;

use super::{ChatParams, TokenCompletion};

/// A response being sampled segment by segment.
pub(crate) struct SegmentedResponse {
    prompt: Vec<u32>,
    params: SamplingParams,
    ids: Vec<u32>,
    logprobs: Vec<f32>,
    temperatures: Vec<f32>,
    temperature: f64,
    switched: bool,
    scaffolded: bool,
    segments: u64,
    done: bool,
}

impl SegmentedResponse {
    pub(crate) fn new(prompt: Vec<u32>, params: SamplingParams) -> Self {
        let done = params.max_new_tokens == 0;
        Self {
            prompt,
            temperature: params.temperature,
            params,
            ids: Vec::new(),
            logprobs: Vec::new(),
            temperatures: Vec::new(),
            switched: false,
            scaffolded: false,
            segments: 0,
            done,
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    fn scaffold_due(&self) -> bool {
        self.params.scaffold.is_some() && !self.scaffolded
    }

    /// The next segment's request: the prompt plus the tokens so far, and the settings until
    /// the next marker. Its seed is the response's for the first segment and a fixed function
    /// of it and the segment's index after.
    pub(crate) fn next_request(&self) -> (Vec<u32>, ChatParams) {
        let p = &self.params;
        let mut prompt = self.prompt.clone();
        prompt.extend_from_slice(&self.ids);
        let mut budget = p.max_new_tokens.saturating_sub(self.ids.len());
        let mut stop = p.stop.clone();
        if let Some(sw) = p.temperature_switch.as_ref().filter(|_| !self.switched) {
            stop.push(sw.marker.clone());
        }
        if let Some(sc) = p.scaffold.as_ref().filter(|_| self.scaffold_due()) {
            stop.push(sc.marker.clone());
            if sc.max_tokens > 0 {
                budget = budget.min(sc.max_tokens.saturating_sub(self.ids.len()).max(1));
            }
        }
        stop.retain(|s| !s.is_empty());
        stop.dedup();
        let seed = p
            .seed
            .wrapping_add(self.segments.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let params = ChatParams {
            temperature: self.temperature,
            max_tokens: u32::try_from(budget).unwrap_or(u32::MAX),
            seed: Some(seed),
            ..ChatParams::from_sampling(p, stop)
        };
        (prompt, params)
    }

    /// Takes a segment's reply and applies the rules at its end.
    pub(crate) fn absorb(
        &mut self,
        reply: TokenCompletion,
        codec: &Arc<dyn TextCodec>,
    ) -> Result<(), TrainError> {
        self.segments += 1;
        let eos = codec.eos_ids();
        let before = self.ids.len();
        self.ids.extend_from_slice(&reply.token_ids);
        self.logprobs
            .extend(reply.logprobs.iter().map(|&x| x as f32));
        self.temperatures
            .resize(self.ids.len(), self.temperature as f32);
        let ended = self.ids.len() > before && self.ids.last().is_some_and(|t| eos.contains(t));
        if ended && !self.scaffold_due() {
            self.done = true;
            return Ok(());
        }
        if ended {
            // About to end before its scaffold: the marker and the text replace the EOS.
            self.ids.pop();
            self.logprobs.pop();
            self.temperatures.pop();
        }
        let text = codec.decode(&self.ids)?;
        let mut forced = Vec::new();
        if let Some(sc) = self.params.scaffold.clone().filter(|_| self.scaffold_due()) {
            if ended {
                forced = codec.encode_text(&format!("{}{}", sc.marker, sc.text))?;
                self.scaffolded = true;
            } else if text.contains(&sc.marker) {
                forced = codec.encode_text(&sc.text)?;
                self.scaffolded = true;
            } else if sc.max_tokens > 0 && self.ids.len() >= sc.max_tokens {
                forced = codec.encode_text(&format!("{}{}", sc.marker, sc.text))?;
                self.scaffolded = true;
            }
        }
        // As the native engine: the stop strings and the switch are checked on the text so far
        // before the forced tokens are placed, then after each of them.
        if self.check(&text) {
            return Ok(());
        }
        for tok in forced {
            if self.ids.len() >= self.params.max_new_tokens {
                break;
            }
            self.ids.push(tok);
            self.logprobs.push(0.0);
            self.temperatures.push(0.0);
            let text = codec.decode(&self.ids)?;
            if self.check(&text) {
                return Ok(());
            }
        }
        if self.ids.len() >= self.params.max_new_tokens {
            self.done = true;
        }
        let stalled = self.ids.len() == before && !ended;
        if stalled {
            // The server returned nothing (a stop string at once): nothing more can come.
            self.done = true;
        }
        Ok(())
    }

    /// Ends the response at a stop string, or switches the temperature at its marker; true
    /// when the response ended.
    fn check(&mut self, text: &str) -> bool {
        if self
            .params
            .stop
            .iter()
            .any(|s| !s.is_empty() && text.contains(s.as_str()))
        {
            self.done = true;
            return true;
        }
        if let Some(sw) = self.params.temperature_switch.as_ref() {
            if !self.switched && text.contains(&sw.marker) {
                self.temperature = sw.temperature;
                self.switched = true;
            }
        }
        false
    }

    /// The finished response as the trainer's generation (text decoded here; an end token is
    /// not text).
    pub(crate) fn into_generation(self, codec: &Arc<dyn TextCodec>) -> Result<Generation, TrainError> {
        let eos = codec.eos_ids();
        let text_ids = match self.ids.split_last() {
            Some((last, rest)) if eos.contains(last) => rest,
            _ => &self.ids[..],
        };
        Ok(Generation {
            text: codec.decode(text_ids)?,
            prompt_ids: self.prompt,
            response_ids: self.ids,
            logprobs: self.logprobs,
            temperatures: self.temperatures,
        })
    }
}
