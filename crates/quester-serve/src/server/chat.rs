//! `POST /v1/chat/completions`: checks a request, queues its choices on the generation thread
//! (429 at once when the queue is full) and answers them whole or as server-sent events. A
//! request whose client has gone is marked so, and its sequences are dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use super::backend::{BackendError, GenerationOutput};
use super::batcher::{Event, Job};
use super::delta::DeltaText;
use super::http::{respond, unix_now, Shared};
use super::request::{parse_chat_request, ApiError, ParsedRequest};
use super::sse::SseWriter;
use super::wire::{Connection, HttpRequest, Response};
use crate::openai::protocol::{
    ChatCompletionChunk, ChatCompletionResponse, Choice, ChoiceLogprobs, ChunkChoice, Delta, Usage,
    WireMessage,
};

/// How often a stream waiting for tokens checks that its client is still there.
const KEEP_ALIVE: Duration = Duration::from_secs(1);

/// How often a non-streamed request waiting for its answer checks that its client is still
/// there (a peek at the socket, cheap).
const PROBE: Duration = Duration::from_millis(50);

/// Marks its request's job abandoned when the handler ends, however it ends: the generation
/// thread then drops whatever of it is still waiting or running.
struct MarkGone(Arc<AtomicBool>);

impl Drop for MarkGone {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Handles one chat-completions request, answering it; false when the connection must close.
pub(crate) fn chat(
    conn: &mut Connection,
    request: &HttpRequest,
    shared: &Shared,
    jobs: &Sender<Job>,
) -> bool {
    let parsed = match parse(request, shared) {
        Ok(p) => p,
        Err(e) => return respond(conn, request, Err(e)),
    };
    let n = parsed.sequences.len();
    let limit = shared.config.max_queue;
    if n > limit {
        // It would never fit: a 429 would have the client retry forever.
        let too_many = format!("`n` is {n}, more than this server ever queues ({limit})");
        return respond(conn, request, Err(ApiError::invalid("n", too_many)));
    }
    let Some(permit) = shared.queue.admit(n) else {
        let busy =
            format!("the server is busy: {limit} sequences are queued or running; retry later");
        return respond(conn, request, Err(ApiError::new(429, busy)));
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
        let closing = ApiError::new(503, "the server is shutting down");
        return respond(conn, request, Err(closing));
    }
    if parsed.stream {
        stream(conn, request.http11, &rx, &parsed, shared) && request.http11
    } else {
        match collect(conn, &rx, n) {
            Some(result) => {
                let result = result.map(|outputs| whole(outputs, shared));
                respond(conn, request, result)
            }
            // The client hung up: nobody to answer.
            None => false,
        }
    }
}

/// Parses and checks the request (the conversation against the backend's template).
fn parse(request: &HttpRequest, shared: &Shared) -> Result<ParsedRequest, ApiError> {
    let fallback_seed = shared.next_seed.fetch_add(1 << 20, Ordering::Relaxed);
    let parsed = parse_chat_request(&request.body, &shared.config, fallback_seed)?;
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

/// Every choice's output, in order, or the first failure; None once the client has gone
/// (checked every [`PROBE`] while waiting).
fn collect(
    conn: &Connection,
    rx: &Receiver<Event>,
    n: usize,
) -> Option<Result<Vec<GenerationOutput>, ApiError>> {
    let mut outs: Vec<Option<Result<GenerationOutput, BackendError>>> = vec![None; n];
    let mut left = n;
    while left > 0 {
        match rx.recv_timeout(PROBE) {
            Ok(Event::Done { index, result }) => {
                if let Some(slot) = outs.get_mut(index).filter(|s| s.is_none()) {
                    *slot = Some(result);
                    left -= 1;
                }
            }
            Ok(Event::Tokens { .. }) => {}
            Err(RecvTimeoutError::Timeout) => {
                if conn.client_gone() {
                    return None;
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Some(Err(ApiError::new(500, "the generation thread stopped")))
            }
        }
    }
    Some(
        outs.into_iter()
            .flatten()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ApiError::new(if e.invalid_request { 400 } else { 500 }, e.message)),
    )
}

fn completion_id(shared: &Shared) -> String {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    format!("chatcmpl-{}-{id}", shared.started)
}

/// The non-streamed answer.
fn whole(outputs: Vec<GenerationOutput>, shared: &Shared) -> Response {
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
    Response::json(
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

/// Streams the choices as they are generated; false when the connection must close (the
/// client has gone: the caller's [`MarkGone`] then drops what is left).
fn stream(
    conn: &mut Connection,
    http11: bool,
    rx: &Receiver<Event>,
    parsed: &ParsedRequest,
    shared: &Shared,
) -> bool {
    let Ok(mut sse) = SseWriter::start(conn.writer(), http11) else {
        return false;
    };
    stream_events(&mut sse, rx, parsed, shared)
        .and_then(|ended| if ended { sse.done() } else { sse.end() })
        .is_ok()
}

/// Writes the stream's events; Ok(false) when it ended with an error event (no `[DONE]`).
fn stream_events(
    sse: &mut SseWriter<'_>,
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
