//! Any trainer [`Policy`] (the native model, a tabular policy, ...) as a [`ChatBackend`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::openai::protocol::{FinishReason, TokenLogprob, WireMessage};
use quester_train::policy::{
    ChatMessage, GenRequest, Generation, Orders, Policy, SamplingParams, StepOutput, TextCodec,
};

use super::backend::{
    BackendError, BackendOrders, BackendStep, ChatBackend, ChatCodec, GenerationOutput,
    GenerationRequest, Progress,
};

/// Serves a [`Policy`] through [`Policy::generate_continuous`] (every request with its own
/// sampling settings, stop strings included; the native model takes new requests at every
/// token step, other policies batch by batch). The text is also cut at the first stop
/// string here, because not every policy honours them (the tabular one does not), and
/// log-prob entries name their token by id (`"id:123"`), since not every policy has a
/// tokenizer. The policy's [`TextCodec`], when it has one, checks prompts and decodes streamed
/// tokens on the HTTP threads.
pub(crate) struct PolicyBackend {
    policy: Box<dyn Policy>,
    model_id: String,
}

impl PolicyBackend {
    /// Serves `policy` under `model_id`.
    pub fn new(policy: Box<dyn Policy>, model_id: impl Into<String>) -> Self {
        Self {
            policy,
            model_id: model_id.into(),
        }
    }
}

fn params_of(r: &GenerationRequest) -> SamplingParams {
    SamplingParams {
        temperature: r.temperature,
        top_p: r.top_p,
        top_k: r.top_k,
        max_new_tokens: r.max_tokens,
        stop: r.stop.clone(),
        seed: r.seed,
        ..SamplingParams::default()
    }
}

fn output(request: &GenerationRequest, gen: Generation) -> GenerationOutput {
    let mut text = gen.text;
    let stop_at = request
        .stop
        .iter()
        .filter_map(|s| text.find(s.as_str()).map(|pos| (pos, s.len())))
        .min();
    let finish_reason = match stop_at {
        Some((pos, len)) => {
            text.truncate(if request.include_stop { pos + len } else { pos });
            FinishReason::Stop
        }
        None if gen.response_ids.len() >= request.max_tokens => FinishReason::Length,
        None => FinishReason::Stop,
    };
    let logprobs = if request.logprobs {
        token_logprobs(&gen.response_ids, &gen.logprobs)
    } else {
        Vec::new()
    };
    GenerationOutput {
        text,
        finish_reason,
        prompt_tokens: gen.prompt_ids.len(),
        completion_tokens: gen.response_ids.len(),
        token_ids: gen.response_ids,
        logprobs,
    }
}

/// Log-prob entries naming each token by id.
fn token_logprobs(ids: &[u32], logprobs: &[f32]) -> Vec<TokenLogprob> {
    logprobs
        .iter()
        .enumerate()
        .map(|(i, &lp)| TokenLogprob {
            token: ids.get(i).map_or_else(String::new, |id| format!("id:{id}")),
            logprob: f64::from(lp),
        })
        .collect()
}

/// `list` as the policy's requests, remembered in `live`.
fn to_policy(
    list: Vec<(u64, GenerationRequest)>,
    live: &mut HashMap<u64, GenerationRequest>,
) -> Vec<(u64, GenRequest)> {
    list.into_iter()
        .map(|(key, r)| {
            let g = gen_request(&r);
            live.insert(key, r);
            (key, g)
        })
        .collect()
}

fn gen_request(r: &GenerationRequest) -> GenRequest {
    GenRequest {
        messages: chat_messages(&r.messages),
        response_prefix: String::new(),
        prompt_ids: r.prompt_ids.clone(),
        params: params_of(r),
    }
}

fn chat_messages(messages: &[WireMessage]) -> Vec<ChatMessage> {
    messages
        .iter()
        .map(|m| ChatMessage {
            role: m.role.clone(),
            content: m.content.clone(),
        })
        .collect()
}

impl ChatBackend for PolicyBackend {
    fn model_id(&self) -> String {
        self.model_id.clone()
    }

    fn generate_continuous(
        &mut self,
        first: Vec<(u64, GenerationRequest)>,
        on_step: &mut dyn FnMut(BackendStep) -> BackendOrders,
    ) -> Result<(), BackendError> {
        // The live requests, for cutting their text and formatting their log-probs.
        let mut live: HashMap<u64, GenerationRequest> = HashMap::new();
        let first = to_policy(first, &mut live);
        self.policy
            .generate_continuous(first, &mut |out: StepOutput| {
                let finished = out
                    .finished
                    .into_iter()
                    .map(|(key, gen)| {
                        let result = match live.remove(&key) {
                            Some(r) => Ok(output(&r, gen)),
                            None => Err(BackendError::internal(format!(
                                "the policy answered an unknown request {key}"
                            ))),
                        };
                        (key, result)
                    })
                    .collect();
                let progress = out
                    .progress
                    .into_iter()
                    .filter_map(|(key, p)| {
                        let r = live.get(&key)?;
                        let logprobs = if r.logprobs {
                            token_logprobs(&p.token_ids, &p.logprobs)
                        } else {
                            Vec::new()
                        };
                        Some((
                            key,
                            Progress {
                                token_ids: p.token_ids,
                                logprobs,
                            },
                        ))
                    })
                    .collect();
                let orders = on_step(BackendStep { finished, progress });
                for key in &orders.cancel {
                    live.remove(key);
                }
                Ok(Orders {
                    submit: to_policy(orders.submit, &mut live),
                    cancel: orders.cancel,
                })
            })
            .map_err(|e| BackendError::internal(e.to_string()))
    }

    fn set_adapter(&mut self, dir: Option<&std::path::Path>) -> Result<(), BackendError> {
        self.policy
            .set_adapter(dir)
            .map_err(|e| BackendError::invalid(e.to_string()))
    }

    fn codec(&self) -> Option<Arc<dyn ChatCodec>> {
        let codec = self.policy.text_codec()?;
        Some(Arc::new(PolicyCodec(codec)))
    }
}

/// A policy's [`TextCodec`] as the server's [`ChatCodec`].
struct PolicyCodec(Arc<dyn TextCodec>);

impl ChatCodec for PolicyCodec {
    fn prompt_tokens(&self, messages: &[WireMessage]) -> Result<usize, BackendError> {
        self.0
            .encode(&chat_messages(messages), "")
            .map(|ids| ids.len())
            .map_err(|e| BackendError::invalid(e.to_string()))
    }

    fn check_prompt_ids(&self, ids: &[u32]) -> Result<(), BackendError> {
        quester_train::policy::check_prompt_ids(ids, self.0.vocab_size())
            .map_err(|e| BackendError::invalid(e.to_string()))
    }

    fn decode(&self, ids: &[u32]) -> Result<String, BackendError> {
        self.0
            .decode(ids)
            .map_err(|e| BackendError::internal(e.to_string()))
    }
}
