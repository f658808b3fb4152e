//! The client as an evaluation [`Policy`]: each request of a batch is one chat completion, sent
//! with bounded concurrency and its own seed.

use quester_train::policy::{GenRequest, Generation, Policy, SamplingParams};
use quester_train::TrainError;

use super::protocol::WireMessage;
use super::{ChatParams, OpenAiClient, OpenAiConfig, OpenAiError};

/// A remote model behind an OpenAI-compatible server, for evaluation (it cannot be trained).
///
/// Token ids are not part of the API, so `prompt_ids` and `response_ids` stay empty; `logprobs`
/// (and `temperatures`, one per log-prob) are filled when `request_logprobs` is on and the
/// server returns them.
#[derive(Debug, Clone)]
pub struct OpenAiPolicy {
    client: OpenAiClient,
    stop: Vec<String>,
}

impl OpenAiPolicy {
    /// A policy talking to the server of `config`.
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        Ok(Self {
            client: OpenAiClient::new(config)?,
            stop: Vec::new(),
        })
    }

    /// Stop strings sent with every request.
    pub fn with_stop(mut self, stop: Vec<String>) -> Self {
        self.stop = stop;
        self
    }

    /// The underlying client.
    pub fn client(&self) -> &OpenAiClient {
        &self.client
    }

    fn chat_params(&self, params: &SamplingParams, seed: u64) -> ChatParams {
        // Only the policy's own stop list: OpenAI servers cut the stop string from the text,
        // and the rollout's stops are closing tags the action parser needs to see.
        ChatParams {
            seed: Some(seed),
            ..ChatParams::from_sampling(params, self.stop.clone())
        }
    }
}

impl Policy for OpenAiPolicy {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        let batch: Vec<(Vec<WireMessage>, ChatParams)> = requests
            .iter()
            .map(|r| {
                let messages = r
                    .messages
                    .iter()
                    .map(|m| WireMessage::new(m.role.clone(), m.content.clone()))
                    .collect();
                (messages, self.chat_params(&r.params, r.params.seed))
            })
            .collect();
        self.client
            .chat_many(&batch)
            .into_iter()
            .enumerate()
            .zip(requests)
            .map(|((i, reply), r)| {
                // After the client's retries a failure is real: evaluating on with an empty
                // answer would silently lower the score.
                let reply = reply.map_err(|e| TrainError::Policy(format!("request {i}: {e}")))?;
                let logprobs: Vec<f32> = reply
                    .logprobs
                    .unwrap_or_default()
                    .iter()
                    .map(|t| t.logprob as f32)
                    .collect();
                Ok(Generation {
                    text: reply.text,
                    prompt_ids: Vec::new(),
                    response_ids: Vec::new(),
                    temperatures: vec![r.params.temperature as f32; logprobs.len()],
                    logprobs,
                })
            })
            .collect()
    }
}
