//! Rollouts sampled on remote servers. Every request is rendered here, with the trainer's own
//! chat template and forced openings, and sent as token ids to OpenAI-compatible servers (vLLM,
//! `quester serve`); the token ids and log-probs they sampled come back as the generation. So the
//! tokens a trainer trains on are exactly the tokens sampled: nothing is re-tokenised.

use std::sync::Arc;

use std::path::Path;

use quester_train::policy::remote::RolloutSampler;
use quester_train::policy::{ChatMessage, GenRequest, Generation, Policy, TextCodec};
use quester_train::{TrainConfig, TrainError};

use super::segmented::SegmentedResponse;
use super::{ChatParams, OpenAiClient, OpenAiConfig, OpenAiError, TokenCompletion};

/// A [`Policy`] whose generations come from one or more servers. Requests are spread over the
/// servers by tokens: each goes to the server with the fewest prompt plus new tokens assigned
/// so far in the call.
///
/// A server that cannot be reached (connection refused or reset, a timeout, HTTP 5xx after the
/// client's retries) is taken out: its requests go to the others, and it gets no work until it
/// has loaded the current adapter at a later weight sync. With every server out, the call fails
/// naming each one and its error.
pub struct RemoteSampler {
    clients: Vec<OpenAiClient>,
    /// Per server: taken out after an unreachable answer, until it loads an adapter again.
    out: Vec<bool>,
    codec: Arc<dyn TextCodec>,
    /// The model or adapter id every request names.
    model: String,
}

/// The server could not serve at all (as against refusing one request): its work may go to
/// another server.
fn unreachable(e: &OpenAiError) -> bool {
    match e {
        OpenAiError::Timeout { .. } | OpenAiError::Transport { .. } => true,
        OpenAiError::Status { status, .. } => *status >= 500,
        _ => false,
    }
}

impl RemoteSampler {
    /// A sampler on the servers at `base_urls` (each up to and including `/v1`), with `config`'s
    /// timeouts, retries and concurrency per server, rendering and decoding with `codec`.
    pub fn new(
        base_urls: &[String],
        config: &OpenAiConfig,
        codec: Arc<dyn TextCodec>,
    ) -> Result<Self, OpenAiError> {
        if base_urls.is_empty() {
            return Err(OpenAiError::Config(
                "servers: name at least one server".into(),
            ));
        }
        let clients = base_urls
            .iter()
            .map(|url| {
                OpenAiClient::new(OpenAiConfig {
                    base_url: url.clone(),
                    ..config.clone()
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            out: vec![false; base_urls.len()],
            clients,
            codec,
            model: config.model.clone(),
        })
    }

    /// Names the model or adapter version the next requests ask for.
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.model = model.into();
    }

    /// The model or adapter id requests name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The request's prompt ids (rendered here unless given) and its response to sample.
    fn prepare(&self, r: &GenRequest) -> Result<SegmentedResponse, TrainError> {
        let prompt = match &r.prompt_ids {
            Some(ids) => ids.clone(),
            None => self.codec.encode(&r.messages, &r.response_prefix)?,
        };
        Ok(SegmentedResponse::new(prompt, r.params.clone()))
    }

    /// The servers taken out after an unreachable answer (see the type's doc).
    pub fn servers_out(&self) -> Vec<&str> {
        self.clients
            .iter()
            .zip(&self.out)
            .filter(|(_, &out)| out)
            .map(|(c, _)| c.config().base_url.as_str())
            .collect()
    }

    /// The server each request goes to: the serving one least loaded in tokens so far (None
    /// when every server is out).
    fn assign(&self, sizes: &[usize]) -> Option<Vec<usize>> {
        let serving: Vec<usize> = (0..self.clients.len()).filter(|&s| !self.out[s]).collect();
        if serving.is_empty() {
            return None;
        }
        let mut load = vec![0usize; self.clients.len()];
        Some(
            sizes
                .iter()
                .map(|&size| {
                    let server = serving
                        .iter()
                        .copied()
                        .min_by_key(|&s| load[s])
                        .unwrap_or(serving[0]);
                    load[server] += size;
                    server
                })
                .collect(),
        )
    }

    /// Every request answered, spread over the serving servers; the requests of a server that
    /// cannot be reached go to the others (see the type's doc).
    fn complete_all(
        &mut self,
        prepared: &[(Vec<u32>, ChatParams)],
    ) -> Result<Vec<TokenCompletion>, TrainError> {
        let sizes: Vec<usize> = prepared
            .iter()
            .map(|(prompt, params)| prompt.len() + params.max_tokens as usize)
            .collect();
        let mut replies: Vec<Option<TokenCompletion>> = (0..prepared.len()).map(|_| None).collect();
        let mut pending: Vec<usize> = (0..prepared.len()).collect();
        // Why each server was taken out, for the error when none is left.
        let mut why: Vec<String> = Vec::new();
        while !pending.is_empty() {
            let pending_sizes: Vec<usize> = pending.iter().map(|&i| sizes[i]).collect();
            let Some(servers) = self.assign(&pending_sizes) else {
                return Err(TrainError::Policy(format!(
                    "every rollout server is out ({}); {} request(s) unanswered",
                    if why.is_empty() {
                        "taken out at an earlier step".to_string()
                    } else {
                        why.join("; ")
                    },
                    pending.len()
                )));
            };
            let results = self.send(&pending, &servers, prepared);
            let mut again = Vec::new();
            for ((&i, &server), result) in pending.iter().zip(&servers).zip(results) {
                match result {
                    Ok(reply) => replies[i] = Some(reply),
                    Err(e) if unreachable(&e) => {
                        if !self.out[server] {
                            let url = &self.clients[server].config().base_url;
                            tracing::warn!(
                                server = %url,
                                error = %e,
                                "rollout server taken out; its requests go to the others"
                            );
                            why.push(format!("{url}: {e}"));
                            self.out[server] = true;
                        }
                        again.push(i);
                    }
                    Err(e) => return Err(TrainError::Policy(format!("request {i}: {e}"))),
                }
            }
            pending = again;
        }
        replies
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.ok_or_else(|| TrainError::Policy(format!("request {i} got no answer"))))
            .collect()
    }

    /// Sends each request of `pending` to its server, side by side, and returns the replies in
    /// `pending`'s order.
    fn send(
        &self,
        pending: &[usize],
        servers: &[usize],
        prepared: &[(Vec<u32>, ChatParams)],
    ) -> Vec<Result<TokenCompletion, OpenAiError>> {
        let shares: Vec<Vec<usize>> = (0..self.clients.len())
            .map(|s| (0..pending.len()).filter(|&k| servers[k] == s).collect())
            .collect();
        let mut replies: Vec<Option<Result<TokenCompletion, OpenAiError>>> =
            (0..pending.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = shares
                .iter()
                .enumerate()
                .filter(|(_, share)| !share.is_empty())
                .map(|(s, share)| {
                    let batch: Vec<(String, Vec<u32>, ChatParams)> = share
                        .iter()
                        .map(|&k| {
                            let (prompt, params) = &prepared[pending[k]];
                            (self.model.clone(), prompt.clone(), params.clone())
                        })
                        .collect();
                    let client = &self.clients[s];
                    (share, scope.spawn(move || client.complete_ids_many(&batch)))
                })
                .collect();
            for (share, handle) in handles {
                let results = handle.join().unwrap_or_else(|_| {
                    share
                        .iter()
                        .map(|_| Err(OpenAiError::Config("a request thread panicked".into())))
                        .collect()
                });
                for (&k, result) in share.iter().zip(results) {
                    replies[k] = Some(result);
                }
            }
        });
        replies
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(OpenAiError::Config("no answer".into()))))
            .collect()
    }
}

impl Policy for RemoteSampler {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        let mut responses: Vec<SegmentedResponse> = requests
            .iter()
            .map(|r| self.prepare(r))
            .collect::<Result<_, _>>()?;
        // Rounds of segments: a response without in-response rules takes one.
        loop {
            let open: Vec<usize> = (0..responses.len())
                .filter(|&i| !responses[i].is_done())
                .collect();
            if open.is_empty() {
                break;
            }
            let batch: Vec<(Vec<u32>, ChatParams)> =
                open.iter().map(|&i| responses[i].next_request()).collect();
            let replies = self.complete_all(&batch)?;
            for (&i, reply) in open.iter().zip(replies) {
                responses[i].absorb(reply, &self.codec)?;
            }
        }
        responses
            .into_iter()
            .map(|r| r.into_generation(&self.codec))
            .collect()
    }

    fn text_codec(&self) -> Option<Arc<dyn TextCodec>> {
        Some(Arc::clone(&self.codec))
    }

    fn encode(
        &mut self,
        messages: &[ChatMessage],
        response_prefix: &str,
    ) -> Result<Vec<u32>, TrainError> {
        self.codec.encode(messages, response_prefix)
    }
}

impl RolloutSampler for RemoteSampler {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        Policy::generate(self, requests)
    }

    /// Loads the adapter into every server, those taken out included: one that loads it serves
    /// again, one still unreachable stays out. A server that answers but refuses the adapter
    /// fails the sync, and so does a sync that leaves no server, so no request can reach a
    /// server holding an older version under the new name.
    fn load_adapter(&mut self, dir: &Path, name: &str) -> Result<(), TrainError> {
        let mut why = Vec::new();
        for (s, client) in self.clients.iter().enumerate() {
            let url = &client.config().base_url;
            match client.load_lora_adapter(name, dir) {
                Ok(()) => {
                    if self.out[s] {
                        tracing::info!(server = %url, adapter = name, "rollout server back");
                    }
                    self.out[s] = false;
                }
                Err(e) if unreachable(&e) => {
                    if !self.out[s] {
                        tracing::warn!(server = %url, error = %e, "rollout server taken out");
                    }
                    self.out[s] = true;
                    why.push(format!("{url}: {e}"));
                }
                Err(e) => {
                    return Err(TrainError::Policy(format!(
                        "loading adapter {name} into {url}: {e}"
                    )))
                }
            }
        }
        if self.out.iter().all(|&o| o) {
            return Err(TrainError::Policy(format!(
                "loading adapter {name}: every rollout server is out ({})",
                why.join("; ")
            )));
        }
        self.set_model(name);
        Ok(())
    }
}

/// The rollout sampler of `rollout.engine = "openai"`: `rollout.servers`, with the client's
/// defaults (timeouts, retries) and 8 requests in flight per server.
pub fn rollout_sampler(
    cfg: &TrainConfig,
    codec: Arc<dyn TextCodec>,
) -> Result<Box<dyn RolloutSampler>, TrainError> {
    let config = OpenAiConfig {
        model: "base".into(),
        max_concurrency: 8,
        ..OpenAiConfig::default()
    };
    let sampler = RemoteSampler::new(&cfg.rollout.servers, &config, codec)
        .map_err(|e| TrainError::Config(format!("rollout.servers: {e}")))?;
    Ok(Box::new(sampler))
}
