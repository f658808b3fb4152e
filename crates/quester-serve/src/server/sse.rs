//! A streamed answer: the generation thread's events for one request, as OpenAI's
//! server-sent `chat.completion.chunk`s. The body stream owns the request's [`MarkGone`], so
//! when hyper drops it (the client left) the request's sequences are dropped.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc::UnboundedReceiver;

use super::backend::ChatCodec;
use super::batcher::Event;
use super::chat::MarkGone;
use super::delta::DeltaText;
use super::http::{unix_now, Shared};
use super::request::{ApiError, ParsedRequest};
use crate::openai::protocol::{
    ChatCompletionChunk, ChoiceLogprobs, ChunkChoice, Delta, FinishReason, TokenLogprob, Usage,
};

/// One streamed request, from its first chunks to `[DONE]` (or an error event).
pub(crate) struct ChatStream {
    rx: UnboundedReceiver<Event>,
    _gone: MarkGone,
    id: String,
    created: u64,
    model: String,
    codec: Option<Arc<dyn ChatCodec>>,
    include_usage: bool,
    /// Each choice's text so far, and how many of its logprobs were sent.
    texts: Vec<DeltaText>,
    logprobs_sent: Vec<usize>,
    open: Vec<bool>,
    usage: Usage,
    /// Events ready to send.
    ready: VecDeque<SseEvent>,
    /// Nothing comes after `ready`.
    ended: bool,
}

impl ChatStream {
    /// The stream of a request just queued; its first chunk per choice (the role) is ready at
    /// once.
    pub fn new(
        rx: UnboundedReceiver<Event>,
        gone: MarkGone,
        parsed: &ParsedRequest,
        shared: &Shared,
    ) -> Self {
        let n = parsed.sequences.len();
        let mut stream = Self {
            rx,
            _gone: gone,
            id: shared.completion_id(),
            created: unix_now(),
            model: shared.model_id.clone(),
            codec: shared.codec.clone(),
            include_usage: parsed.include_usage,
            texts: parsed
                .sequences
                .iter()
                .map(|s| DeltaText::new(s.stop.clone()))
                .collect(),
            logprobs_sent: vec![0; n],
            open: vec![true; n],
            usage: Usage::default(),
            ready: VecDeque::new(),
            ended: false,
        };
        for index in 0..n {
            let role = Delta {
                role: Some("assistant".into()),
                content: Some(String::new()),
            };
            stream.choice(index, role, None, None);
        }
        stream
    }

    /// The next event to send; None once the stream is over.
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.ended {
                return None;
            }
            match self.rx.recv().await {
                Some(event) => self.on(event),
                None => self.fail(&ApiError::new(500, "the generation thread stopped")),
            }
        }
    }

    /// Turns one event of the generation thread into chunks.
    fn on(&mut self, event: Event) {
        match event {
            Event::Tokens { index, progress } => {
                let (Some(text), Some(sent)) =
                    (self.texts.get_mut(index), self.logprobs_sent.get_mut(index))
                else {
                    return;
                };
                let delta = match &self.codec {
                    Some(codec) => match text.push(&progress.token_ids, |ids| codec.decode(ids)) {
                        Ok(d) => d,
                        Err(e) => return self.fail(&ApiError::new(500, e.message)),
                    },
                    None => String::new(),
                };
                *sent += progress.logprobs.len();
                self.content(index, delta, progress.logprobs);
            }
            Event::Done {
                index,
                result: Ok(out),
            } => {
                let (Some(text), Some(&sent), Some(open)) = (
                    self.texts.get_mut(index),
                    self.logprobs_sent.get(index),
                    self.open.get_mut(index),
                ) else {
                    return;
                };
                *open = false;
                let rest = text.finish(&out.text);
                let logprobs = out.logprobs.get(sent..).unwrap_or_default().to_vec();
                self.content(index, rest, logprobs);
                self.choice(index, Delta::default(), None, Some(out.finish_reason));
                self.usage.prompt_tokens = out.prompt_tokens;
                self.usage.completion_tokens += out.completion_tokens;
                if !self.open.contains(&true) {
                    self.finish();
                }
            }
            Event::Done { result: Err(e), .. } => {
                let status = if e.invalid_request { 400 } else { 500 };
                self.fail(&ApiError::new(status, e.message));
            }
        }
    }

    /// A content chunk, unless it carries nothing.
    fn content(&mut self, index: usize, text: String, logprobs: Vec<TokenLogprob>) {
        if text.is_empty() && logprobs.is_empty() {
            return;
        }
        let delta = Delta {
            role: None,
            content: Some(text),
        };
        let logprobs = (!logprobs.is_empty()).then_some(ChoiceLogprobs { content: logprobs });
        self.choice(index, delta, logprobs, None);
    }

    fn choice(
        &mut self,
        index: usize,
        delta: Delta,
        logprobs: Option<ChoiceLogprobs>,
        finish_reason: Option<FinishReason>,
    ) {
        let choice = ChunkChoice {
            index,
            delta,
            logprobs,
            finish_reason,
        };
        self.chunk(vec![choice], None);
    }

    fn chunk(&mut self, choices: Vec<ChunkChoice>, usage: Option<Usage>) {
        let chunk = ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".into(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage,
        };
        self.data(&chunk);
    }

    fn data(&mut self, body: &impl serde::Serialize) {
        // Serializing our own types cannot fail; an empty object would still be valid JSON.
        let json = serde_json::to_string(body).unwrap_or_else(|_| "{}".into());
        self.ready.push_back(SseEvent::default().data(json));
    }

    /// Every choice ended: the usage chunk when asked, then `[DONE]`.
    fn finish(&mut self) {
        if self.include_usage {
            let mut usage = self.usage;
            usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
            self.chunk(Vec::new(), Some(usage));
        }
        self.ready.push_back(SseEvent::default().data("[DONE]"));
        self.ended = true;
    }

    /// A failure after the stream started: an error event, and no `[DONE]`.
    fn fail(&mut self, error: &ApiError) {
        self.data(&error.body());
        self.ended = true;
    }
}

impl IntoResponse for ChatStream {
    fn into_response(self) -> Response {
        let events = futures_util::stream::unfold(self, |mut stream| async move {
            let event = stream.next().await?;
            Some((Ok::<_, Infallible>(event), stream))
        });
        // Comments while nothing else is sent keep proxies from timing the stream out.
        Sse::new(events)
            .keep_alive(KeepAlive::default().text("keep-alive"))
            .into_response()
    }
}
