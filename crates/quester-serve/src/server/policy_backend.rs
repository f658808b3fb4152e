//! Any trainer [`Policy`] (the native model, a tabular policy, ...) as a [`ChatBackend`].

use crate::openai::protocol::{FinishReason, TokenLogprob};
use quester_train::policy::{ChatMessage, GenRequest, Generation, Policy, SamplingParams};

use super::backend::{BackendError, ChatBackend, GenerationOutput, GenerationRequest};

/// Serves a [`Policy`]. A batch goes to the policy in ONE `generate` call (every request with
/// its own sampling settings, stop strings included). The text is also cut at the first stop
/// string here, because not every policy honours them (the tabular one does not), and a
/// `Policy` exposes no tokenizer, so log-prob entries name their token by id (`"id:123"`).
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
        let requests: Vec<GenRequest> = batch
            .iter()
            .map(|r| GenRequest {
                messages: r
                    .messages
                    .iter()
                    .map(|m| ChatMessage {
                        role: m.role.clone(),
                        content: m.content.clone(),
                    })
                    .collect(),
                response_prefix: String::new(),
                params: params_of(r),
            })
            .collect();
        match self.policy.generate(&requests) {
            Ok(gens) if gens.len() == batch.len() => {
                for (i, gen) in gens.into_iter().enumerate() {
                    results[i] = Some(Ok(output(&batch[i], gen)));
                }
            }
            Ok(gens) => {
                let err = BackendError::internal(format!(
                    "the policy returned {} responses for {} requests",
                    gens.len(),
                    batch.len()
                ));
                results.iter_mut().for_each(|r| *r = Some(Err(err.clone())));
            }
            Err(e) => {
                let err = BackendError::internal(e.to_string());
                results.iter_mut().for_each(|r| *r = Some(Err(err.clone())));
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(BackendError::internal("request not generated"))))
            .collect()
    }
}
