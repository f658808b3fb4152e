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
        let rules_before = (self.scaffolded, self.switched);
        let eos = codec.eos_ids();
        let before = self.ids.len();
        self.ids.extend_from_slice(&reply.token_ids);
        self.logprobs
            .extend(reply.logprobs.iter().map(|&x| x as f32));
        self.temperatures
            .resize(self.ids.len(), self.temperature as f32);
        if self.params.temperature_switch.is_none() && self.params.scaffold.is_none() {
            // No rule can fire: the server's end is the response's, and its text is decoded
            // once, at the end.
            self.done = true;
            return Ok(());
        }
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
        // Only a rule that fired opens another segment: otherwise the server ended the
        // response its own way (a stop string, its length limit, its context's end).
        let fired = (self.scaffolded, self.switched) != rules_before;
        if !fired || self.ids.len() >= self.params.max_new_tokens {
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
    pub(crate) fn into_generation(
        self,
        codec: &Arc<dyn TextCodec>,
    ) -> Result<Generation, TrainError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use quester_train::policy::{ChatMessage, Scaffold, TemperatureSwitch};

    /// One token per byte; id 0 is the end of a sequence.
    struct Bytes;

    impl TextCodec for Bytes {
        fn encode(&self, _: &[ChatMessage], prefix: &str) -> Result<Vec<u32>, TrainError> {
            self.encode_text(prefix)
        }
        fn decode(&self, ids: &[u32]) -> Result<String, TrainError> {
            Ok(ids
                .iter()
                .filter(|&&t| t != 0)
                .map(|&t| char::from(t as u8))
                .collect())
        }
        fn encode_text(&self, text: &str) -> Result<Vec<u32>, TrainError> {
            Ok(text.bytes().map(u32::from).collect())
        }
        fn vocab_size(&self) -> usize {
            256
        }
        fn eos_ids(&self) -> Vec<u32> {
            vec![0]
        }
    }

    fn codec() -> Arc<dyn TextCodec> {
        Arc::new(Bytes)
    }

    fn reply(text: &str, eos: bool) -> TokenCompletion {
        let mut token_ids: Vec<u32> = text.bytes().map(u32::from).collect();
        if eos {
            token_ids.push(0);
        }
        TokenCompletion {
            logprobs: vec![-0.5; token_ids.len()],
            token_ids,
            text: text.into(),
            finish_reason: None,
        }
    }

    fn sge(max_new_tokens: usize, max_tokens: usize) -> SamplingParams {
        SamplingParams {
            temperature: 1.2,
            max_new_tokens,
            seed: 9,
            stop: vec!["</a>".into()],
            scaffold: Some(Scaffold {
                marker: "</s>".into(),
                text: "<a>".into(),
                max_tokens,
            }),
            temperature_switch: Some(TemperatureSwitch {
                marker: "</s>".into(),
                temperature: 0.5,
            }),
            ..SamplingParams::default()
        }
    }

    #[test]
    fn a_marker_written_by_the_model_forces_the_text_and_switches() {
        let c = codec();
        let mut r = SegmentedResponse::new(vec![1, 2], sge(40, 0));
        let (prompt, p) = r.next_request();
        assert_eq!(prompt, [1, 2]);
        assert_eq!((p.temperature, p.max_tokens, p.seed), (1.2, 40, Some(9)));
        assert_eq!(p.stop, ["</a>", "</s>"]);
        r.absorb(reply("plan</s>", false), &c).unwrap();
        assert!(!r.is_done());
        let (prompt, p) = r.next_request();
        assert_eq!(c.decode(&prompt).unwrap(), "\u{1}\u{2}plan</s><a>");
        assert_eq!((p.temperature, p.max_tokens), (0.5, 40 - 11));
        assert_ne!(p.seed, Some(9));
        assert_eq!(p.stop, ["</a>"]);
        r.absorb(reply("3</a>", false), &c).unwrap();
        assert!(r.is_done());
        let g = r.into_generation(&c).unwrap();
        assert_eq!(g.text, "plan</s><a>3</a>");
        let mut temps = vec![1.2f32; 8];
        temps.extend([0.0; 3]);
        temps.extend([0.5; 5]);
        assert_eq!(g.temperatures, temps);
        assert_eq!(&g.logprobs[8..11], [0.0; 3]);
    }

    #[test]
    fn an_end_before_the_scaffold_is_replaced_by_the_marker_and_the_text() {
        let c = codec();
        let mut r = SegmentedResponse::new(vec![1], sge(40, 0));
        r.absorb(reply("ab", true), &c).unwrap();
        assert!(!r.is_done());
        let (prompt, p) = r.next_request();
        assert_eq!(c.decode(&prompt).unwrap(), "\u{1}ab</s><a>");
        assert_eq!(p.temperature, 0.5);
        // Ending now ends the response, EOS kept in the ids and out of the text.
        r.absorb(reply("2", true), &c).unwrap();
        assert!(r.is_done());
        let g = r.into_generation(&c).unwrap();
        assert_eq!(g.text, "ab</s><a>2");
        assert_eq!(g.response_ids.last(), Some(&0));
    }

    #[test]
    fn too_long_a_strategy_is_closed_after_max_tokens() {
        let c = codec();
        let mut r = SegmentedResponse::new(vec![1], sge(40, 4));
        let (_, p) = r.next_request();
        assert_eq!(p.max_tokens, 4);
        r.absorb(reply("long", false), &c).unwrap();
        let g = {
            r.absorb(reply("x</a>", false), &c).unwrap();
            r.into_generation(&c).unwrap()
        };
        assert_eq!(g.text, "long</s><a>x</a>");
        assert_eq!(g.temperatures[4..11], [0.0; 7]);
        assert_eq!(g.temperatures[11..], [0.5; 5]);
    }

    #[test]
    fn the_token_budget_cuts_forced_text_and_a_plain_request_is_one_segment() {
        let c = codec();
        let mut r = SegmentedResponse::new(vec![1], sge(6, 0));
        r.absorb(reply("p</s>", false), &c).unwrap();
        assert!(r.is_done());
        assert_eq!(r.into_generation(&c).unwrap().text, "p</s><");
        let plain = SamplingParams {
            max_new_tokens: 8,
            stop: vec!["!".into()],
            ..SamplingParams::default()
        };
        let mut r = SegmentedResponse::new(vec![1], plain);
        let (_, p) = r.next_request();
        assert_eq!(p.stop, ["!"]);
        r.absorb(reply("hi", false), &c).unwrap();
        assert!(
            r.is_done(),
            "no rule fired: the server's end is the response's"
        );
    }
}
