//! Any trainer [`Policy`] (the native model, a tabular policy, ...) as a [`ChatBackend`].

use crate::openai::protocol::{FinishReason, TokenLogprob};
use crate::policy::{ChatMessage, GenRequest, Generation, Policy, SamplingParams};

use super::backend::{BackendError, ChatBackend, GenerationOutput, GenerationRequest};

/// Serves a [`Policy`]. Requests of a batch with equal sampling settings go to the policy in
/// ONE `generate` call. A `Policy` knows no stop strings, so they are applied to the returned
/// text (the tokens after the stop are still generated and counted), and it exposes no
/// tokenizer, so log-prob entries name their token by id (`"id:123"`).
pub struct PolicyBackend {
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
        max_tokens: r.max_tokens,
        stop: r.stop.clone(),
    }
}

fn output(request: &GenerationRequest, gen: Generation) -> GenerationOutput {
    let mut text = gen.text;
    let stop_at = request
        .stop
        .iter()
        .filter_map(|s| text.find(s.as_str()))
        .min();
    let finish_reason = match stop_at {
        Some(pos) => {
            text.truncate(pos);
            FinishReason::Stop
        }
        None if gen.response_ids.len() >= request.max_tokens => FinishReason::Length,
        None => FinishReason::Stop,
    };
    let logprobs = if request.logprobs {
        gen.logprobs
            .iter()
            .enumerate()
            .map(|(i, &lp)| TokenLogprob {
                token: gen
                    .response_ids
                    .get(i)
                    .map_or_else(String::new, |id| format!("id:{id}")),
                logprob: f64::from(lp),
            })
            .collect()
    } else {
        Vec::new()
    };
    GenerationOutput {
        text,
        finish_reason,
        prompt_tokens: gen.prompt_ids.len(),
        completion_tokens: gen.response_ids.len(),
        logprobs,
    }
}

impl ChatBackend for PolicyBackend {
    fn model_id(&self) -> String {
        self.model_id.clone()
    }

    fn generate(
        &mut self,
        batch: &[GenerationRequest],
    ) -> Vec<Result<GenerationOutput, BackendError>> {
        let mut results: Vec<Option<Result<GenerationOutput, BackendError>>> =
            batch.iter().map(|_| None).collect();
        // Group by sampling settings: a Policy takes one SamplingParams per call.
        let mut groups: Vec<(SamplingParams, Vec<usize>)> = Vec::new();
        for (i, r) in batch.iter().enumerate() {
            let p = params_of(r);
            match groups.iter_mut().find(|(q, _)| *q == p) {
                Some((_, members)) => members.push(i),
                None => groups.push((p, vec![i])),
            }
        }
        for (params, members) in groups {
            let requests: Vec<GenRequest> = members
                .iter()
                .map(|&i| GenRequest {
                    messages: batch[i]
                        .messages
                        .iter()
                        .map(|m| ChatMessage {
                            role: m.role.clone(),
                            content: m.content.clone(),
                        })
                        .collect(),
                    seed: batch[i].seed,
                    response_prefix: String::new(),
                })
                .collect();
            match self.policy.generate(&requests, &params) {
                Ok(gens) if gens.len() == members.len() => {
                    for (&i, gen) in members.iter().zip(gens) {
                        results[i] = Some(Ok(output(&batch[i], gen)));
                    }
                }
                Ok(gens) => {
                    let err = BackendError::internal(format!(
                        "the policy returned {} responses for {} requests",
                        gens.len(),
                        members.len()
                    ));
                    for &i in &members {
                        results[i] = Some(Err(err.clone()));
                    }
                }
                Err(e) => {
                    let err = BackendError::internal(e.to_string());
                    for &i in &members {
                        results[i] = Some(Err(err.clone()));
                    }
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(BackendError::internal("request not generated"))))
            .collect()
    }
}
