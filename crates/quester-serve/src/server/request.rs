//! Parsing and validating a chat-completions request body, naming the field at fault.

use serde_json::{Map, Value};

use super::backend::GenerationRequest;
use super::ServeConfig;
use crate::openai::protocol::{ErrorBody, ErrorDetail, WireMessage};

/// Most choices (`n`) per request.
pub(crate) const MAX_CHOICES: usize = 16;

/// An HTTP error answer in OpenAI's error shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// Explanation.
    pub message: String,
    /// The request field at fault.
    pub param: Option<String>,
}

impl ApiError {
    /// A 400 about `param`.
    pub fn invalid(param: &str, message: impl Into<String>) -> Self {
        Self {
            status: 400,
            message: message.into(),
            param: Some(param.to_string()),
        }
    }

    /// An error with `status` and no particular field.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            param: None,
        }
    }

    /// The JSON body.
    pub fn body(&self) -> ErrorBody {
        let kind = match self.status {
            400 | 413 => "invalid_request_error",
            404 | 405 => "not_found_error",
            // OpenAI's shape for a rate limit: the limited resource, and a code.
            429 => "requests",
            _ => "server_error",
        };
        ErrorBody {
            error: ErrorDetail {
                message: self.message.clone(),
                kind: kind.to_string(),
                param: self.param.clone(),
                code: (self.status == 429).then(|| "rate_limit_exceeded".to_string()),
            },
        }
    }
}

/// A parsed request: the sequences to generate (one per choice) and how to answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParsedRequest {
    /// One per choice, seeds `seed, seed+1, ...`.
    pub sequences: Vec<GenerationRequest>,
    /// Answer with server-sent events as tokens come.
    pub stream: bool,
    /// End a stream with a chunk of token counts (`stream_options.include_usage`).
    pub include_usage: bool,
    /// The model the request names.
    pub model: Option<String>,
}

fn number(obj: &Map<String, Value>, key: &str) -> Result<Option<f64>, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| ApiError::invalid(key, format!("`{key}` must be a number, got {v}"))),
    }
}

fn integer(obj: &Map<String, Value>, key: &str) -> Result<Option<i64>, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| ApiError::invalid(key, format!("`{key}` must be an integer, got {v}"))),
    }
}

fn flag(obj: &Map<String, Value>, key: &str) -> Result<bool, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| ApiError::invalid(key, format!("`{key}` must be a boolean"))),
    }
}

fn messages(obj: &Map<String, Value>) -> Result<Vec<WireMessage>, ApiError> {
    let list = obj
        .get("messages")
        .ok_or_else(|| ApiError::invalid("messages", "missing field `messages`"))?
        .as_array()
        .ok_or_else(|| ApiError::invalid("messages", "`messages` must be an array"))?;
    if list.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "`messages` must not be empty",
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, m)| {
            let field = |name: &str| {
                m.get(name).and_then(Value::as_str).ok_or_else(|| {
                    ApiError::invalid(
                        "messages",
                        format!("`messages[{i}].{name}` is missing or not a string"),
                    )
                })
            };
            let role = field("role")?;
            if !matches!(role, "system" | "user" | "assistant") {
                return Err(ApiError::invalid(
                    "messages",
                    format!("`messages[{i}].role` must be system, user or assistant, got {role:?}"),
                ));
            }
            Ok(WireMessage::new(role, field("content")?))
        })
        .collect()
}

fn stop(obj: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    let bad = || ApiError::invalid("stop", "`stop` must be a string or an array of strings");
    let list = match obj.get("stop") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|s| s.as_str().map(str::to_string).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad()),
    };
    Ok(list.into_iter().filter(|s| !s.is_empty()).collect())
}

/// The sampling fields both endpoints share, checked.
struct Sampling {
    temperature: f64,
    top_p: f64,
    top_k: usize,
    max_tokens: usize,
    n: usize,
    seed: u64,
    stop: Vec<String>,
}

impl Sampling {
    /// One sequence per choice, seeds `seed, seed+1, ...`.
    fn sequences(
        &self,
        messages: Vec<WireMessage>,
        prompt_ids: Option<Vec<u32>>,
        logprobs: bool,
        include_stop: bool,
    ) -> Vec<GenerationRequest> {
        (0..self.n as u64)
            .map(|i| GenerationRequest {
                messages: messages.clone(),
                prompt_ids: prompt_ids.clone(),
                temperature: self.temperature,
                top_p: self.top_p,
                top_k: self.top_k,
                max_tokens: self.max_tokens,
                stop: self.stop.clone(),
                include_stop,
                seed: self.seed.wrapping_add(i),
                logprobs,
            })
            .collect()
    }
}

fn sampling(
    obj: &Map<String, Value>,
    config: &ServeConfig,
    fallback_seed: u64,
) -> Result<Sampling, ApiError> {
    let temperature = number(obj, "temperature")?.unwrap_or(1.0);
    if !(0.0..=100.0).contains(&temperature) {
        return Err(ApiError::invalid(
            "temperature",
            format!("`temperature` must be in [0, 100], got {temperature}"),
        ));
    }
    let top_p = number(obj, "top_p")?.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(ApiError::invalid(
            "top_p",
            format!("`top_p` must be in (0, 1], got {top_p}"),
        ));
    }
    let top_k = integer(obj, "top_k")?.unwrap_or(0);
    // llama.cpp uses -1 for "disabled"; accept it as 0.
    let top_k = usize::try_from(top_k.max(0)).unwrap_or(0);
    let limit = config.max_tokens_limit;
    let max_tokens = match integer(obj, "max_tokens")?.or(integer(obj, "max_completion_tokens")?) {
        None => config.default_max_tokens.min(limit),
        Some(m) if m >= 1 && (m as u64) <= limit as u64 => m as usize,
        Some(m) => {
            return Err(ApiError::invalid(
                "max_tokens",
                format!("`max_tokens` must be in [1, {limit}], got {m}"),
            ))
        }
    };
    let n = match integer(obj, "n")? {
        None => 1,
        Some(n) if n >= 1 && n as usize <= MAX_CHOICES => n as usize,
        Some(n) => {
            return Err(ApiError::invalid(
                "n",
                format!("`n` must be in [1, {MAX_CHOICES}], got {n}"),
            ))
        }
    };
    let seed = match obj.get("seed") {
        None | Some(Value::Null) => fallback_seed,
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_i64().map(|s| s as u64))
            .ok_or_else(|| {
                ApiError::invalid("seed", format!("`seed` must be an integer, got {v}"))
            })?,
    };
    Ok(Sampling {
        temperature,
        top_p,
        top_k,
        max_tokens,
        n,
        seed,
        stop: stop(obj)?,
    })
}

/// The `model` a request names, if any.
fn model(obj: &Map<String, Value>) -> Result<Option<String>, ApiError> {
    match obj.get("model") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(m)) => Ok(Some(m.clone())),
        Some(v) => Err(ApiError::invalid(
            "model",
            format!("`model` must be a string, got {v}"),
        )),
    }
}

/// The body as a JSON object.
fn json_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::new(400, format!("request body is not JSON: {e}")))?;
    match value {
        Value::Object(obj) => Ok(obj),
        _ => Err(ApiError::new(400, "request body must be a JSON object")),
    }
}

/// Parses `body`; `fallback_seed` seeds a request that brings no `seed`.
pub(crate) fn parse_chat_request(
    body: &[u8],
    config: &ServeConfig,
    fallback_seed: u64,
) -> Result<ParsedRequest, ApiError> {
    let obj = &json_object(body)?;
    let stream = flag(obj, "stream")?;
    let include_usage = match obj.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => flag(o, "include_usage").map_err(|_| {
            ApiError::invalid(
                "stream_options",
                "`stream_options.include_usage` must be a boolean",
            )
        })?,
        Some(_) => {
            return Err(ApiError::invalid(
                "stream_options",
                "`stream_options` must be an object",
            ))
        }
    };
    let messages = messages(obj)?;
    let sampling = sampling(obj, config, fallback_seed)?;
    let logprobs = flag(obj, "logprobs")?;
    let sequences = sampling.sequences(messages, None, logprobs, false);
    Ok(ParsedRequest {
        sequences,
        stream,
        include_usage,
        model: model(obj)?,
    })
}

/// A parsed `/v1/completions` request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParsedCompletion {
    /// One per choice, seeds `seed, seed+1, ...`.
    pub sequences: Vec<GenerationRequest>,
    /// Answer with `prompt_token_ids` and `token_ids` in every choice (vLLM's extension).
    pub return_token_ids: bool,
    /// The model the request names.
    pub model: Option<String>,
}

/// The token-id prompt of a completions request.
fn prompt_ids(obj: &Map<String, Value>) -> Result<Vec<u32>, ApiError> {
    let bad = |m: String| ApiError::invalid("prompt", m);
    let list =
        match obj.get("prompt") {
            None | Some(Value::Null) => return Err(bad("missing field `prompt`".into())),
            Some(Value::String(_)) => return Err(bad(
                "`prompt` as text is not supported here: send token ids (a conversation goes to \
                 /v1/chat/completions, which applies the model's chat template)"
                    .into(),
            )),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(bad("`prompt` must be an array of token ids".into())),
        };
    // One prompt may come wrapped in a batch of one.
    let list = match list.as_slice() {
        [Value::Array(inner)] => inner,
        [Value::Array(_), ..] => {
            return Err(bad(format!(
                "one prompt per request, got a batch of {}",
                list.len()
            )))
        }
        _ => list,
    };
    if list.is_empty() {
        return Err(bad("`prompt` must not be empty".into()));
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_u64()
                .and_then(|id| u32::try_from(id).ok())
                .ok_or_else(|| bad(format!("`prompt[{i}]` must be a token id, got {v}")))
        })
        .collect()
}

/// Parses a `/v1/completions` body (the prompt as token ids); `fallback_seed` seeds a request
/// that brings no `seed`.
pub(crate) fn parse_completion_request(
    body: &[u8],
    config: &ServeConfig,
    fallback_seed: u64,
) -> Result<ParsedCompletion, ApiError> {
    let obj = &json_object(body)?;
    if flag(obj, "stream")? {
        return Err(ApiError::invalid(
            "stream",
            "streaming is not supported on /v1/completions (it is on /v1/chat/completions)",
        ));
    }
    if flag(obj, "echo")? {
        return Err(ApiError::invalid("echo", "`echo` is not supported"));
    }
    let ids = prompt_ids(obj)?;
    let logprobs = match integer(obj, "logprobs")? {
        None => false,
        Some(0) => true,
        Some(k) => {
            return Err(ApiError::invalid(
                "logprobs",
                format!(
                    "`logprobs` must be 0 (the sampled tokens' log-probs; the most likely \
                     alternatives are not computed), got {k}"
                ),
            ))
        }
    };
    let sampling = sampling(obj, config, fallback_seed)?;
    let include_stop = flag(obj, "include_stop_str_in_output")?;
    Ok(ParsedCompletion {
        sequences: sampling.sequences(Vec::new(), Some(ids), logprobs, include_stop),
        return_token_ids: flag(obj, "return_token_ids")?,
        model: model(obj)?,
    })
}
