//! `POST /v1/chat/completions`: checks a request, queues its choices on the generation thread
//! (429 at once when the queue is full) and answers them whole or as server-sent events. A
//! request whose client has gone is marked so, and its sequences are dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tokio::sync::mpsc::{self, UnboundedReceiver};

use super::backend::{BackendError, GenerationOutput, GenerationRequest};
use super::batcher::{Event, Job, Work};
use super::http::{unix_now, Shared};
use super::request::{parse_chat_request, ApiError, ParsedRequest};
use super::sse::ChatStream;
use crate::openai::protocol::{ChatCompletionResponse, Choice, ChoiceLogprobs, Usage, WireMessage};

/// Marks its request's job abandoned when dropped, however the answer ends: with the handler's
/// future (hyper drops it when a client hangs up on a plain request) or with the event stream
/// (dropped when a streaming client leaves). The generation thread then drops whatever of the
/// job is still waiting or running.
pub(crate) struct MarkGone(Arc<AtomicBool>);

impl Drop for MarkGone {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Handles one chat-completions request.
pub(crate) async fn chat(
    State(shared): State<Arc<Shared>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(&shared, body)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn answer(
    shared: &Arc<Shared>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|e| body_error(&e, shared.config.max_body_bytes))?;
    let parsed = parse(&body, shared)?;
    let n = parsed.sequences.len();
    let (mut rx, mark) = enqueue(
        shared,
        parsed.model.clone(),
        parsed.sequences.clone(),
        parsed.stream,
    )?;
    if parsed.stream {
        return Ok(ChatStream::new(rx, mark, &parsed, shared).into_response());
    }
    let outputs = collect(&mut rx, n).await?;
    drop(mark);
    Ok(Json(whole(outputs, shared)).into_response())
}

/// Queues `sequences` (one request's choices) on the generation thread, or answers 429 when
/// the queue is full. Their events come back on the receiver; dropping the marker tells the
/// generation thread the client is gone.
pub(crate) fn enqueue(
    shared: &Arc<Shared>,
    model: Option<String>,
    sequences: Vec<GenerationRequest>,
    stream: bool,
) -> Result<(UnboundedReceiver<Event>, MarkGone), ApiError> {
    let n = sequences.len();
    let limit = shared.config.max_queue;
    if n > limit {
        // It would never fit: a 429 would have the client retry forever.
        let too_many = format!("`n` is {n}, more than this server ever queues ({limit})");
        return Err(ApiError::invalid("n", too_many));
    }
    let Some(permit) = shared.queue.admit(n) else {
        let busy =
            format!("the server is busy: {limit} sequences are queued or running; retry later");
        return Err(ApiError::new(429, busy));
    };
    // Events come back on tokio's unbounded channel: sending never blocks the generation
    // thread, and the handler awaits them.
    let (events, rx) = mpsc::unbounded_channel();
    let gone = Arc::new(AtomicBool::new(false));
    let mark = MarkGone(Arc::clone(&gone));
    let job = Job {
        model,
        sequences,
        stream,
        events,
        gone,
        _permit: permit,
    };
    if shared.jobs.send(Work::Generate(job)).is_err() {
        return Err(ApiError::new(503, "the server is shutting down"));
    }
    Ok((rx, mark))
}

/// The error answer for a body that could not be read.
pub(crate) fn body_error(e: &BytesRejection, max_body: usize) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(413, format!("request body exceeds {max_body} bytes"))
    } else {
        ApiError::new(e.status().as_u16(), e.body_text())
    }
}

/// Parses and checks the request (the conversation against the backend's template).
fn parse(body: &[u8], shared: &Shared) -> Result<ParsedRequest, ApiError> {
    let fallback_seed = shared.next_seed.fetch_add(1 << 20, Ordering::Relaxed);
    let parsed = parse_chat_request(body, &shared.config, fallback_seed)?;
    if let (Some(codec), Some(first)) = (&shared.codec, parsed.sequences.first()) {
        codec
            .prompt_tokens(&first.messages)
            .map_err(|e| error_of(&e))?;
    }
    Ok(parsed)
}

fn error_of(e: &BackendError) -> ApiError {
    if e.invalid_request {
        ApiError::invalid("messages", e.message.clone())
    } else {
        ApiError::new(500, e.message.clone())
    }
}

/// Every choice's output, in order, or the first failure.
pub(crate) async fn collect(
    rx: &mut UnboundedReceiver<Event>,
    n: usize,
) -> Result<Vec<GenerationOutput>, ApiError> {
    let mut outs: Vec<Option<Result<GenerationOutput, BackendError>>> = vec![None; n];
    let mut left = n;
    while left > 0 {
        match rx.recv().await {
            Some(Event::Done { index, result }) => {
                if let Some(slot) = outs.get_mut(index).filter(|s| s.is_none()) {
                    *slot = Some(result);
                    left -= 1;
                }
            }
            Some(Event::Tokens { .. }) => {}
            None => return Err(ApiError::new(500, "the generation thread stopped")),
        }
    }
    outs.into_iter()
        .flatten()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::new(if e.invalid_request { 400 } else { 500 }, e.message))
}

/// The non-streamed answer.
fn whole(outputs: Vec<GenerationOutput>, shared: &Shared) -> ChatCompletionResponse {
    let prompt_tokens = outputs.first().map_or(0, |o| o.prompt_tokens);
    let completion_tokens = outputs.iter().map(|o| o.completion_tokens).sum();
    let choices = outputs
        .into_iter()
        .enumerate()
        .map(|(index, out)| Choice {
            index,
            message: WireMessage::new("assistant", out.text),
            finish_reason: out.finish_reason,
            logprobs: (!out.logprobs.is_empty()).then_some(ChoiceLogprobs {
                content: out.logprobs,
            }),
        })
        .collect();
    ChatCompletionResponse {
        id: shared.completion_id(),
        object: "chat.completion".into(),
        created: unix_now(),
        model: shared.model_id.clone(),
        choices,
        usage: Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        },
    }
}
