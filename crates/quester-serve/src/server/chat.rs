//! `POST /v1/chat/completions`: checks a request, queues its choices on the generation thread
//! (429 at once when the queue is full) and answers them whole or as server-sent events. A
//! request whose client has gone is marked so, and its sequences are dropped.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use super::backend::{BackendError, GenerationOutput};
use super::batcher::{Event, Job};
use super::delta::DeltaText;
use super::http::{json_response, respond, unix_now, Shared};
use super::request::{parse_chat_request, ApiError, ParsedRequest};
use super::sse::SseWriter;
use crate::openai::protocol::{
    ChatCompletionChunk, ChatCompletionResponse, Choice, ChoiceLogprobs, ChunkChoice, Delta, Usage,
    WireMessage,
};

/// How often a stream waiting for tokens checks that its client is still there.
const KEEP_ALIVE: Duration = Duration::from_secs(1);

/// Marks its request's job abandoned when the handler ends, however it ends: the generation
/// thread then drops whatever of it is still waiting or running.
struct MarkGone(Arc<AtomicBool>);

impl Drop for MarkGone {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Handles one chat-completions request, answering it.
pub(crate) fn chat(mut request: tiny_http::Request, shared: &Shared, jobs: &Sender<Job>) {
    let parsed = match read_request(&mut request, shared) {
        Ok(p) => p,
        Err(e) => return respond(request, Err(e)),
    };
    let n = parsed.sequences.len();
    let Some(permit) = shared.queue.admit(n) else {
        let limit = shared.config.max_queue;
        return respond(
            request,
            Err(ApiError::new(
                429,
                format!("the server is busy: {limit} sequences are queued or running; retry later"),
            )),
        );
    };
    let (events, rx) = mpsc::channel();
    let gone = Arc::new(AtomicBool::new(false));
    let _mark = MarkGone(Arc::clone(&gone));
    let job = Job {
        sequences: parsed.sequences.clone(),
        stream: parsed.stream,
        events,
        gone,
        _permit: permit,
    };
    if jobs.send(job).is_err() {
        return respond(
            request,
            Err(ApiError::new(503, "the server is shutting down")),
        );
    }
    if parsed.stream {
        stream(request, &rx, &parsed, shared);
    } else {
        let result = collect(&rx, n).map(|outputs| whole(outputs, shared));
        respond(request, result);
    }
}

/// Reads, parses and checks the request (the conversation against the backend's template).
fn read_request(
    request: &mut tiny_http::Request,
    shared: &Shared,
) -> Result<ParsedRequest, ApiError> {
    let limit = shared.config.max_body_bytes;
    let mut body = Vec::new();
    request
        .as_reader()
        .take(limit as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| ApiError::new(400, format!("cannot read the request body: {e}")))?;
    if body.len() > limit {
        return Err(ApiError::new(
            413,
            format!("request body exceeds {limit} bytes"),
        ));
    }
    let fallback_seed = shared.next_seed.fetch_add(1 << 20, Ordering::Relaxed);
    let parsed = parse_chat_request(&body, &shared.config, fallback_seed)?;
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
fn collect(rx: &Receiver<Event>, n: usize) -> Result<Vec<GenerationOutput>, ApiError> {
    let mut outs: Vec<Option<Result<GenerationOutput, BackendError>>> = vec![None; n];
    let mut left = n;
    while left > 0 {
        match rx.recv() {
            Ok(Event::Done { index, result }) => {
                if let Some(slot) = outs.get_mut(index).filter(|s| s.is_none()) {
                    *slot = Some(result);
                    left -= 1;
                }
            }
            Ok(Event::Tokens { .. }) => {}
            Err(_) => return Err(ApiError::new(500, "the generation thread stopped")),
        }
    }
    outs.into_iter()
        .flatten()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::new(if e.invalid_request { 400 } else { 500 }, e.message))
}

fn completion_id(shared: &Shared) -> String {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    format!("chatcmpl-{}-{id}", shared.started)
}

/// The non-streamed answer.
fn whole(
    outputs: Vec<GenerationOutput>,
    shared: &Shared,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
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
    json_response(
        200,
        &ChatCompletionResponse {
            id: completion_id(shared),
            object: "chat.completion".into(),
            created: unix_now(),
            model: shared.model_id.clone(),
            choices,
            usage: Usage {
                prompt_tokens,
                completion_tokens,
                total_tokens: prompt_tokens + completion_tokens,
            },
        },
    )
}

/// A stream's chunks, all under one id.
struct Chunks {
    id: String,
    created: u64,
    model: String,
}

impl Chunks {
    fn of(&self, choices: Vec<ChunkChoice>, usage: Option<Usage>) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".into(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage,
        }
    }

    fn choice(&self, choice: ChunkChoice) -> ChatCompletionChunk {
        self.of(vec![choice], None)
    }
}

/// Streams the choices as they are generated. Returns when the stream ends or the client is
/// gone (a write failed); the caller's [`MarkGone`] then drops what is left.
fn stream(
    request: tiny_http::Request,
    rx: &Receiver<Event>,
    parsed: &ParsedRequest,
    shared: &Shared,
) {
    let Ok(mut sse) = SseWriter::start(request) else {
        return;
    };
    let _ = stream_events(&mut sse, rx, parsed, shared).and_then(|ended| {
        if ended {
            sse.done()
        } else {
            sse.end()
        }
    });
}

/// Writes the stream's events; Ok(false) when it ended with an error event (no `[DONE]`).
fn stream_events(
    sse: &mut SseWriter,
    rx: &Receiver<Event>,
    parsed: &ParsedRequest,
    shared: &Shared,
) -> std::io::Result<bool> {
    let chunks = Chunks {
        id: completion_id(shared),
        created: unix_now(),
        model: shared.model_id.clone(),
    };
    let n = parsed.sequences.len();
    let content = |index: usize, text: String, logprobs: Vec<_>| ChunkChoice {
        index,
        delta: Delta {
            role: None,
            content: Some(text),
        },
        logprobs: (!logprobs.is_empty()).then_some(ChoiceLogprobs { content: logprobs }),
        finish_reason: None,
    };
    for index in 0..n {
        sse.event(&chunks.choice(ChunkChoice {
            index,
            delta: Delta {
                role: Some("assistant".into()),
                content: Some(String::new()),
            },
            logprobs: None,
            finish_reason: None,
        }))?;
    }
    let mut texts: Vec<DeltaText> = parsed
        .sequences
        .iter()
        .map(|s| DeltaText::new(s.stop.clone()))
        .collect();
    let mut logprobs_sent = vec![0usize; n];
    let mut open = vec![true; n];
    let mut usage = Usage::default();
    while open.contains(&true) {
        let event = match rx.recv_timeout(KEEP_ALIVE) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => {
                // A comment line: ignored by clients, fails once the client has gone.
                sse.comment("keep-alive")?;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => {
                sse.event(&ApiError::new(500, "the generation thread stopped").body())?;
                return Ok(false);
            }
        };
        match event {
            Event::Tokens { index, progress } => {
                let (Some(text), Some(sent)) = (texts.get_mut(index), logprobs_sent.get_mut(index))
                else {
                    continue;
                };
                let delta = match &shared.codec {
                    Some(codec) => match text.push(&progress.token_ids, |ids| codec.decode(ids)) {
                        Ok(d) => d,
                        Err(e) => {
                            sse.event(&ApiError::new(500, e.message).body())?;
                            return Ok(false);
                        }
                    },
                    None => String::new(),
                };
                *sent += progress.logprobs.len();
                if !delta.is_empty() || !progress.logprobs.is_empty() {
                    sse.event(&chunks.choice(content(index, delta, progress.logprobs)))?;
                }
            }
            Event::Done {
                index,
                result: Ok(out),
            } => {
                let (Some(text), Some(&sent)) = (texts.get_mut(index), logprobs_sent.get(index))
                else {
                    continue;
                };
                let rest = text.finish(&out.text);
                let logprobs = out.logprobs.get(sent..).unwrap_or_default().to_vec();
                if !rest.is_empty() || !logprobs.is_empty() {
                    sse.event(&chunks.choice(content(index, rest, logprobs)))?;
                }
                sse.event(&chunks.choice(ChunkChoice {
                    index,
                    delta: Delta::default(),
                    logprobs: None,
                    finish_reason: Some(out.finish_reason),
                }))?;
                usage.prompt_tokens = out.prompt_tokens;
                usage.completion_tokens += out.completion_tokens;
                open[index] = false;
            }
            Event::Done { result: Err(e), .. } => {
                let status = if e.invalid_request { 400 } else { 500 };
                sse.event(&ApiError::new(status, e.message).body())?;
                return Ok(false);
            }
        }
    }
    if parsed.include_usage {
        usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
        sse.event(&chunks.of(Vec::new(), Some(usage)))?;
    }
    Ok(true)
}
