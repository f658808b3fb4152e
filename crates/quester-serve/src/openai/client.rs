//! A blocking chat-completions client with timeouts, retries and bounded concurrency.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::error::excerpt;
use super::protocol::{ChatCompletionRequest, StopSpec, TokenLogprob, Usage, WireMessage};
use super::{OpenAiConfig, OpenAiError};

/// Largest response body accepted (a chat completion is far smaller).
const MAX_BODY_BYTES: u64 = 64 << 20;

/// Sampling parameters of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatParams {
    /// Temperature; 0 asks for greedy decoding.
    pub temperature: f64,
    /// Nucleus mass (None: the server's default).
    pub top_p: Option<f64>,
    /// Top-k (None: the server's default).
    pub top_k: Option<i64>,
    /// Most new tokens.
    pub max_tokens: u32,
    /// Stop strings.
    pub stop: Vec<String>,
    /// Sampler seed, for servers that honour it.
    pub seed: Option<u64>,
}

impl ChatParams {
    /// The API's settings for the engine's `params` and `stop` strings: the defaults (top-p 1,
    /// top-k 0) are sent as absent, so servers without these knobs are not confused.
    pub fn from_sampling(
        params: &quester_train::policy::SamplingParams,
        stop: Vec<String>,
    ) -> Self {
        ChatParams {
            temperature: params.temperature,
            top_p: (params.top_p < 1.0).then_some(params.top_p),
            top_k: (params.top_k > 0).then(|| i64::try_from(params.top_k).unwrap_or(i64::MAX)),
            max_tokens: u32::try_from(params.max_new_tokens).unwrap_or(u32::MAX),
            stop,
            seed: Some(params.seed),
        }
    }
}

impl Default for ChatParams {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_p: None,
            top_k: None,
            max_tokens: 256,
            stop: Vec::new(),
            seed: None,
        }
    }
}

/// The first choice of a completion, as the client returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    /// The assistant's text.
    pub text: String,
    /// `stop`, `length`, ... as the server said (None if it said nothing).
    pub finish_reason: Option<String>,
    /// Per-token log-probs when requested and provided.
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// Token counts when the server reported them.
    pub usage: Option<Usage>,
}

/// A completion of a token-id prompt (`POST /completions` with `return_token_ids`): what a
/// trainer trains on, with no re-tokenisation.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenCompletion {
    /// The sampled token ids, an end-of-sequence token or a stop string's tokens included.
    pub token_ids: Vec<u32>,
    /// The log-probability of each, as the server sampled it.
    pub logprobs: Vec<f64>,
    /// The server's text (cut at a stop string unless it was asked to keep it).
    pub text: String,
    /// `stop`, `length`, ... as the server said.
    pub finish_reason: Option<String>,
}

/// Client of one OpenAI-compatible server (llama.cpp server, vLLM, Ollama, `quester serve`).
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    config: OpenAiConfig,
    agent: ureq::Agent,
    api_key: Option<String>,
}

/// Outcome of one HTTP exchange before retry classification.
enum Attempt {
    Done(String),
    Retry(OpenAiError),
    Fail(OpenAiError),
}

impl OpenAiClient {
    /// Builds a client; checks the config and reads the API key variable if one is named.
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        config.validate()?;
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) => Some(std::env::var(var).map_err(|_| {
                OpenAiError::Config(format!(
                    "api_key_env: environment variable {var:?} is not set (or not UTF-8)"
                ))
            })?),
        };
        let agent_config = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs_f64(config.timeout_s)))
            .http_status_as_error(false)
            .build();
        Ok(Self {
            config,
            agent: ureq::Agent::new_with_config(agent_config),
            api_key,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.config.base_url.trim_end_matches('/'), path)
    }

    /// The request body for `messages` with `params`.
    pub(crate) fn request_body(
        &self,
        messages: &[WireMessage],
        params: &ChatParams,
    ) -> ChatCompletionRequest {
        ChatCompletionRequest {
            model: self.config.model.clone(),
            messages: messages.to_vec(),
            temperature: Some(params.temperature),
            top_p: params.top_p,
            top_k: params.top_k,
            max_tokens: Some(i64::from(params.max_tokens)),
            stop: (!params.stop.is_empty()).then(|| StopSpec::Many(params.stop.clone())),
            seed: params.seed.map(wire_seed),
            logprobs: self.config.request_logprobs.then_some(true),
            n: None,
            stream: None,
        }
    }

    /// One chat completion (the first choice), with retries.
    pub fn chat(
        &self,
        messages: &[WireMessage],
        params: &ChatParams,
    ) -> Result<ChatReply, OpenAiError> {
        let url = self.url("chat/completions");
        let body = serde_json::to_string(&self.request_body(messages, params))
            .map_err(|e| OpenAiError::Config(format!("request cannot be serialised: {e}")))?;
        let text = self.send_with_retries(&url, Some(&body))?;
        parse_chat_reply(&url, &text)
    }

    /// Many chat completions, at most `max_concurrency` in flight; results in input order.
    pub fn chat_many(
        &self,
        requests: &[(Vec<WireMessage>, ChatParams)],
    ) -> Vec<Result<ChatReply, OpenAiError>> {
        self.many(requests, |(messages, params)| self.chat(messages, params))
    }

    /// One completion of a token-id prompt under the model (or adapter) id `model`, with
    /// retries: the sampled token ids and their log-probs (`return_token_ids`, `logprobs: 0`;
    /// vLLM and `quester serve` answer them). The stop string stays in the text.
    pub fn complete_ids(
        &self,
        model: &str,
        prompt: &[u32],
        params: &ChatParams,
    ) -> Result<TokenCompletion, OpenAiError> {
        let url = self.url("completions");
        let mut body = serde_json::json!({
            "model": model,
            "prompt": prompt,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "logprobs": 0,
            "return_token_ids": true,
            "include_stop_str_in_output": true,
        });
        if let Some(top_p) = params.top_p {
            body["top_p"] = top_p.into();
        }
        if let Some(top_k) = params.top_k {
            body["top_k"] = top_k.into();
        }
        if let Some(seed) = params.seed {
            body["seed"] = wire_seed(seed).into();
        }
        if !params.stop.is_empty() {
            body["stop"] = params.stop.clone().into();
        }
        let text = self.send_with_retries(&url, Some(&body.to_string()))?;
        parse_token_completion(&url, &text)
    }

    /// Many token-id completions (`(model, prompt, params)`), at most `max_concurrency` in
    /// flight; results in input order.
    pub fn complete_ids_many(
        &self,
        requests: &[(String, Vec<u32>, ChatParams)],
    ) -> Vec<Result<TokenCompletion, OpenAiError>> {
        self.many(requests, |(model, prompt, params)| {
            self.complete_ids(model, prompt, params)
        })
    }

    /// `call` on every item, at most `max_concurrency` at once; results in input order.
    fn many<T: Sync, R: Send>(
        &self,
        items: &[T],
        call: impl Fn(&T) -> Result<R, OpenAiError> + Sync,
    ) -> Vec<Result<R, OpenAiError>> {
        let slots: Vec<Mutex<Option<Result<R, OpenAiError>>>> =
            items.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let workers = self.config.max_concurrency.min(items.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else {
                        break;
                    };
                    let reply = call(item);
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(reply);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|slot| {
                slot.into_inner().ok().flatten().unwrap_or_else(|| {
                    Err(OpenAiError::Config("a request worker panicked".to_string()))
                })
            })
            .collect()
    }

    /// Loads the PEFT adapter in `dir` under `name` (`POST /load_lora_adapter` with
    /// `load_inplace`, vLLM's and `quester serve`'s), with retries. The server must see `dir`.
    pub fn load_lora_adapter(&self, name: &str, dir: &std::path::Path) -> Result<(), OpenAiError> {
        let url = self.url("load_lora_adapter");
        let body = serde_json::json!({
            "lora_name": name,
            "lora_path": dir.display().to_string(),
            "load_inplace": true,
        });
        self.send_with_retries(&url, Some(&body.to_string()))
            .map(|_| ())
    }

    /// The model ids the server lists at `GET /models`.
    pub fn list_models(&self) -> Result<Vec<String>, OpenAiError> {
        let url = self.url("models");
        let text = self.send_with_retries(&url, None)?;
        let malformed = |what: String| OpenAiError::Malformed {
            url: url.clone(),
            what,
            excerpt: excerpt(&text, 200),
        };
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| malformed(format!("body is not JSON ({e})")))?;
        let data = v
            .get("data")
            .ok_or_else(|| malformed("missing field `data`".into()))?
            .as_array()
            .ok_or_else(|| malformed("`data` is not an array".into()))?;
        data.iter()
            .enumerate()
            .map(|(i, m)| {
                m.get("id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| malformed(format!("`data[{i}].id` is missing or not a string")))
            })
            .collect()
    }

    fn send_with_retries(&self, url: &str, body: Option<&str>) -> Result<String, OpenAiError> {
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            match self.send_once(url, body, attempts) {
                Attempt::Done(text) => return Ok(text),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry(e) if attempts > self.config.max_retries => return Err(e),
                Attempt::Retry(e) => {
                    let wait = self.config.backoff_ms(attempts - 1);
                    tracing::warn!("{e}; retrying in {wait} ms");
                    std::thread::sleep(Duration::from_millis(wait));
                }
            }
        }
    }

    fn send_once(&self, url: &str, body: Option<&str>, attempts: u32) -> Attempt {
        let result = match body {
            Some(body) => {
                let mut req = self
                    .agent
                    .post(url)
                    .header("Content-Type", "application/json");
                if let Some(key) = &self.api_key {
                    req = req.header("Authorization", format!("Bearer {key}"));
                }
                req.send(body)
            }
            None => {
                let mut req = self.agent.get(url);
                if let Some(key) = &self.api_key {
                    req = req.header("Authorization", format!("Bearer {key}"));
                }
                req.call()
            }
        };
        let read = result.and_then(|mut resp| {
            let status = resp.status().as_u16();
            let bytes = resp
                .body_mut()
                .with_config()
                .limit(MAX_BODY_BYTES)
                .read_to_vec()?;
            Ok((status, bytes))
        });
        match read {
            Ok((status, bytes)) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                if (200..300).contains(&status) {
                    return Attempt::Done(text);
                }
                let err = OpenAiError::Status {
                    url: url.to_string(),
                    status,
                    message: error_message(&text),
                    attempts,
                };
                if status == 429 || status >= 500 {
                    Attempt::Retry(err)
                } else {
                    Attempt::Fail(err)
                }
            }
            Err(ureq::Error::Timeout(_)) => Attempt::Retry(OpenAiError::Timeout {
                url: url.to_string(),
                timeout_s: self.config.timeout_s,
                attempts,
            }),
            Err(e) => {
                let err = OpenAiError::Transport {
                    url: url.to_string(),
                    message: e.to_string(),
                    attempts,
                };
                match e {
                    // Mistakes in the request itself: retrying cannot help.
                    ureq::Error::BadUri(_)
                    | ureq::Error::Http(_)
                    | ureq::Error::RequireHttpsOnly(_)
                    | ureq::Error::TlsRequired
                    | ureq::Error::BodyExceedsLimit(_) => Attempt::Fail(err),
                    _ => Attempt::Retry(err),
                }
            }
        }
    }
}

/// The server's error message from an OpenAI-style error body, else the start of the body.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        let err = v.get("error")?;
        err.get("message")
            .and_then(Value::as_str)
            .or_else(|| err.as_str())
            .map(str::to_string)
    });
    from_json.unwrap_or_else(|| excerpt(body.trim(), 200))
}

/// Reads the first choice of a chat-completion body, naming the JSON path of anything wrong.
pub fn parse_chat_reply(url: &str, body: &str) -> Result<ChatReply, OpenAiError> {
    let malformed = |what: String| OpenAiError::Malformed {
        url: url.to_string(),
        what,
        excerpt: excerpt(body, 200),
    };
    let v: Value =
        serde_json::from_str(body).map_err(|e| malformed(format!("body is not JSON ({e})")))?;
    if !v.is_object() {
        return Err(malformed("body is not a JSON object".into()));
    }
    if let Some(err) = v.get("error") {
        return Err(malformed(format!("server returned an error object: {err}")));
    }
    let choices = v
        .get("choices")
        .ok_or_else(|| malformed("missing field `choices`".into()))?
        .as_array()
        .ok_or_else(|| malformed("`choices` is not an array".into()))?;
    let choice = choices
        .first()
        .ok_or_else(|| malformed("`choices` is empty".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("missing field `choices[0].message`".into()))?;
    let text = message
        .get("content")
        .ok_or_else(|| malformed("missing field `choices[0].message.content`".into()))?
        .as_str()
        .ok_or_else(|| malformed("`choices[0].message.content` is not a string".into()))?
        .to_string();
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let logprobs = match choice.get("logprobs") {
        None | Some(Value::Null) => None,
        Some(lp) => Some(parse_logprobs(lp).map_err(malformed)?),
    };
    // Usage is informational: a server that reports it oddly still gave a usable answer.
    let usage = v
        .get("usage")
        .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok());
    Ok(ChatReply {
        text,
        finish_reason,
        logprobs,
        usage,
    })
}

/// Reads the first choice of a token-id completion, naming the JSON path of anything wrong.
pub fn parse_token_completion(url: &str, body: &str) -> Result<TokenCompletion, OpenAiError> {
    let malformed = |what: String| OpenAiError::Malformed {
        url: url.to_string(),
        what,
        excerpt: excerpt(body, 200),
    };
    let v: Value =
        serde_json::from_str(body).map_err(|e| malformed(format!("body is not JSON ({e})")))?;
    if let Some(err) = v.get("error") {
        return Err(malformed(format!("server returned an error object: {err}")));
    }
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| malformed("missing or empty `choices`".into()))?;
    let token_ids: Vec<u32> = match choice.get("token_ids") {
        Some(Value::Array(ids)) => ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                id.as_u64()
                    .and_then(|id| u32::try_from(id).ok())
                    .ok_or_else(|| {
                        malformed(format!("`choices[0].token_ids[{i}]` is not a token id"))
                    })
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(malformed(
                "no `choices[0].token_ids`: the server must answer `return_token_ids` (vLLM \
                 0.10.2 or later, or quester serve)"
                    .into(),
            ))
        }
    };
    let logprobs: Vec<f64> = choice
        .get("logprobs")
        .and_then(|lp| lp.get("token_logprobs"))
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no `choices[0].logprobs.token_logprobs`".into()))?
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_f64().ok_or_else(|| {
                malformed(format!(
                    "`choices[0].logprobs.token_logprobs[{i}]` is not a number"
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    if logprobs.len() != token_ids.len() {
        return Err(malformed(format!(
            "{} token ids but {} log-probs",
            token_ids.len(),
            logprobs.len()
        )));
    }
    Ok(TokenCompletion {
        token_ids,
        logprobs,
        text: choice
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

fn parse_logprobs(lp: &Value) -> Result<Vec<TokenLogprob>, String> {
    let content = match lp.get("content") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(c) => c
            .as_array()
            .ok_or("`choices[0].logprobs.content` is not an array")?,
    };
    content
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let token = entry.get("token").and_then(Value::as_str).ok_or(format!(
                "`choices[0].logprobs.content[{i}].token` is missing or not a string"
            ))?;
            let logprob = entry.get("logprob").and_then(Value::as_f64).ok_or(format!(
                "`choices[0].logprobs.content[{i}].logprob` is missing or not a number"
            ))?;
            Ok(TokenLogprob {
                token: token.to_string(),
                logprob,
            })
        })
        .collect()
}

/// A 64-bit seed as the API's signed integer, bit for bit: vLLM refuses seeds above
/// `i64::MAX`, and `quester serve` reads a negative seed back as the same `u64`, so a server's
/// stream equals the trainer's own engine's for every seed.
pub fn wire_seed(seed: u64) -> i64 {
    seed as i64
}
