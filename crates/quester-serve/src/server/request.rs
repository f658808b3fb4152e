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

/// Parses `body`; `fallback_seed` seeds a request that brings no `seed`.
pub(crate) fn parse_chat_request(
    body: &[u8],
    config: &ServeConfig,
    fallback_seed: u64,
) -> Result<ParsedRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::new(400, format!("request body is not JSON: {e}")))?;
    let obj = value
        .as_object()
        .ok_or_else(|| ApiError::new(400, "request body must be a JSON object"))?;
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
    let logprobs = flag(obj, "logprobs")?;
    let stop = stop(obj)?;
    let sequences = (0..n as u64)
        .map(|i| GenerationRequest {
            messages: messages.clone(),
            temperature,
            top_p,
            top_k,
            max_tokens,
            stop: stop.clone(),
            seed: seed.wrapping_add(i),
            logprobs,
        })
        .collect();
    Ok(ParsedRequest {
        sequences,
        stream,
        include_usage,
    })
}
