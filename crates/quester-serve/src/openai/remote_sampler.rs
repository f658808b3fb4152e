//! Rollouts sampled on remote servers. Every request is rendered here, with the trainer's own
//! chat template and forced openings, and sent as token ids to OpenAI-compatible servers (vLLM,
//! `quester serve`); the token ids and log-probs they sampled come back as the generation. So the
//! tokens a trainer trains on are exactly the tokens sampled: nothing is re-tokenised.

use std::sync::Arc;

use std::path::Path;

use quester_train::policy::remote::RolloutSampler;
use quester_train::policy::{ChatMessage, GenRequest, Generation, Policy, TextCodec};
use quester_train::{TrainConfig, TrainError};

use super::{ChatParams, OpenAiClient, OpenAiConfig, OpenAiError, TokenCompletion};

/// A [`Policy`] whose generations come from one or more servers. Requests are spread over the
/// servers by tokens: each goes to the server with the fewest prompt plus new tokens assigned
/// so far in the call.
pub struct RemoteSampler {
    clients: Vec<OpenAiClient>,
    codec: Arc<dyn TextCodec>,
    /// The model or adapter id every request names.
    model: String,
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

    /// The request's prompt ids and its sampling settings as the API's.
    fn prepare(&self, r: &GenRequest) -> Result<(Vec<u32>, ChatParams), TrainError> {
        let p = &r.params;
        if p.temperature_switch.is_some() || p.scaffold.is_some() {
            return Err(TrainError::Policy(
                "a temperature switch or scaffold inside a response is not available on remote \
                 servers yet (SGE's strategy tokens): use rollout.engine = \"native\""
                    .into(),
            ));
        }
        let prompt = match &r.prompt_ids {
            Some(ids) => ids.clone(),
            None => self.codec.encode(&r.messages, &r.response_prefix)?,
        };
        let params = ChatParams {
            temperature: p.temperature,
            top_p: (p.top_p < 1.0).then_some(p.top_p),
            top_k: (p.top_k > 0).then(|| i64::try_from(p.top_k).unwrap_or(i64::MAX)),
            max_tokens: u32::try_from(p.max_new_tokens).unwrap_or(u32::MAX),
            stop: p.stop.clone(),
            seed: Some(p.seed),
        };
        Ok((prompt, params))
    }

    /// The server each request goes to: the least loaded in tokens so far.
    fn assign(&self, sizes: &[usize]) -> Vec<usize> {
        let mut load = vec![0usize; self.clients.len()];
        sizes
            .iter()
            .map(|&size| {
                let server = (0..load.len()).min_by_key(|&s| load[s]).unwrap_or(0);
                load[server] += size;
                server
            })
            .collect()
    }

    /// `reply` as the trainer's generation of `prompt`: the text decoded here from the tokens
    /// (as the native engine decodes them: an end-of-sequence token is not text).
    fn generation(
        &self,
        prompt: Vec<u32>,
        temperature: f64,
        reply: TokenCompletion,
    ) -> Result<Generation, TrainError> {
        let eos = self.codec.eos_ids();
        let text_ids = match reply.token_ids.split_last() {
            Some((last, rest)) if eos.contains(last) => rest,
            _ => &reply.token_ids[..],
        };
        Ok(Generation {
            text: self.codec.decode(text_ids)?,
            prompt_ids: prompt,
            temperatures: vec![temperature as f32; reply.token_ids.len()],
            logprobs: reply.logprobs.iter().map(|&x| x as f32).collect(),
            response_ids: reply.token_ids,
        })
    }
}

impl Policy for RemoteSampler {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        let prepared: Vec<(Vec<u32>, ChatParams)> = requests
            .iter()
            .map(|r| self.prepare(r))
            .collect::<Result<_, _>>()?;
        let sizes: Vec<usize> = prepared
            .iter()
            .map(|(prompt, params)| prompt.len() + params.max_tokens as usize)
            .collect();
        let servers = self.assign(&sizes);
        // Each server's share, with the request indices, sent side by side.
        let shares: Vec<Vec<usize>> = (0..self.clients.len())
            .map(|s| (0..requests.len()).filter(|&i| servers[i] == s).collect())
            .collect();
        let mut replies: Vec<Option<Result<TokenCompletion, OpenAiError>>> =
            (0..requests.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = shares
                .iter()
                .enumerate()
                .filter(|(_, share)| !share.is_empty())
                .map(|(s, share)| {
                    let batch: Vec<(String, Vec<u32>, ChatParams)> = share
                        .iter()
                        .map(|&i| {
                            (
                                self.model.clone(),
                                prepared[i].0.clone(),
                                prepared[i].1.clone(),
                            )
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
                for (&i, result) in share.iter().zip(results) {
                    replies[i] = Some(result);
                }
            }
        });
        replies
            .into_iter()
            .zip(prepared)
            .enumerate()
            .map(|(i, (reply, (prompt, params)))| {
                let reply = reply
                    .ok_or_else(|| TrainError::Policy(format!("request {i} got no answer")))?
                    .map_err(|e| TrainError::Policy(format!("request {i}: {e}")))?;
                self.generation(prompt, params.temperature, reply)
            })
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

    /// Loads the adapter into every server; a server that refuses it fails the sync, so no
    /// request can reach a server holding an older version under the new name.
    fn load_adapter(&mut self, dir: &Path, name: &str) -> Result<(), TrainError> {
        for client in &self.clients {
            client.load_lora_adapter(name, dir).map_err(|e| {
                TrainError::Policy(format!(
                    "loading adapter {name} into {}: {e}",
                    client.config().base_url
                ))
            })?;
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
