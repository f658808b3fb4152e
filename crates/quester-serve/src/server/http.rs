//! The HTTP side of `serve`: routes, JSON answers, the server's lifetime.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::backend::ChatBackend;
use super::batcher::{run_batches, Job};
use super::request::{parse_chat_request, ApiError};
use super::ServeConfig;
use crate::openai::protocol::{
    ChatCompletionResponse, Choice, ChoiceLogprobs, ModelInfo, ModelList, Usage, WireMessage,
};

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {message}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        message: String,
    },
    /// The configuration is unusable.
    #[error("invalid serve config: {0}")]
    Config(String),
    /// The model could not be prepared for serving.
    #[error("cannot serve the model: {0}")]
    Model(String),
}

/// A running server. Dropping it (or calling [`ServerHandle::shutdown`]) stops it.
pub struct ServerHandle {
    addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    stopping: Arc<AtomicBool>,
    http_threads: Vec<JoinHandle<()>>,
    generation_thread: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address actually bound (useful after binding port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL of the API, e.g. `http://127.0.0.1:8080/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Blocks until the server stops (it runs until the process ends or `shutdown` is called
    /// from another thread holding a clone of its stop flag; the CLI simply waits here).
    pub fn wait(mut self) {
        for t in self.http_threads.drain(..) {
            let _ = t.join();
        }
        if let Some(t) = self.generation_thread.take() {
            let _ = t.join();
        }
    }

    /// Stops accepting requests, lets the current batch finish, joins every thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        for _ in 0..self.http_threads.len() {
            self.server.unblock();
        }
        for t in self.http_threads.drain(..) {
            let _ = t.join();
        }
        // Every job sender is gone now, so the generation thread ends after its batch.
        if let Some(t) = self.generation_thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Shared state of the HTTP threads.
struct Shared {
    config: ServeConfig,
    model_id: String,
    started: u64,
    next_seed: AtomicU64,
    next_id: AtomicU64,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Serves `backend` over the OpenAI chat-completions API on `addr` (e.g. `127.0.0.1:0`).
pub fn serve_backend(
    backend: Box<dyn ChatBackend + Send>,
    addr: &str,
    config: ServeConfig,
) -> Result<ServerHandle, ServeError> {
    let model_id = backend.model_id();
    serve_from(
        move || Ok(backend as Box<dyn ChatBackend>),
        &model_id,
        addr,
        config,
    )
}

/// Serves the backend that `make` builds ON the generation thread (so the backend, e.g. a
/// trainer policy holding a model, need not be `Send`). Returns once `make` has succeeded and
/// the port is bound; a failing `make` is [`ServeError::Model`].
pub(crate) fn serve_from<F>(
    make: F,
    model_id: &str,
    addr: &str,
    config: ServeConfig,
) -> Result<ServerHandle, ServeError>
where
    F: FnOnce() -> Result<Box<dyn ChatBackend>, String> + Send + 'static,
{
    if config.http_threads == 0 {
        return Err(ServeError::Config(
            "http_threads: must be at least 1".into(),
        ));
    }
    if config.max_batch == 0 {
        return Err(ServeError::Config("max_batch: must be at least 1".into()));
    }
    let server = tiny_http::Server::http(addr).map_err(|e| ServeError::Bind {
        addr: addr.to_string(),
        message: e.to_string(),
    })?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| ServeError::Bind {
            addr: addr.to_string(),
            message: "not an IP address".into(),
        })?;
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let window = Duration::from_millis(config.batch_window_ms);
    let max_batch = config.max_batch;
    let generation_thread = std::thread::Builder::new()
        .name("serve-generate".into())
        .spawn(move || match make() {
            Ok(backend) => {
                let _ = ready_tx.send(Ok(()));
                run_batches(backend, jobs_rx, max_batch, window);
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        })
        .map_err(|e| ServeError::Config(format!("cannot spawn the generation thread: {e}")))?;
    let ready = ready_rx
        .recv()
        .unwrap_or_else(|_| Err("the model builder panicked".to_string()));
    if let Err(e) = ready {
        let _ = generation_thread.join();
        return Err(ServeError::Model(e));
    }
    let server = Arc::new(server);
    let stopping = Arc::new(AtomicBool::new(false));
    let shared = Arc::new(Shared {
        model_id: model_id.to_string(),
        started: unix_now(),
        // Seeds for requests without one: a fixed sequence from the configured seed.
        next_seed: AtomicU64::new(config.seed),
        next_id: AtomicU64::new(0),
        config: config.clone(),
    });
    let mut handle = ServerHandle {
        addr: bound,
        server,
        stopping,
        http_threads: Vec::with_capacity(config.http_threads),
        generation_thread: Some(generation_thread),
    };
    for i in 0..config.http_threads {
        let server = Arc::clone(&handle.server);
        let stopping = Arc::clone(&handle.stopping);
        let shared = Arc::clone(&shared);
        let jobs = jobs_tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("serve-http-{i}"))
            .spawn(move || http_loop(&server, &stopping, &shared, &jobs));
        match spawned {
            Ok(thread) => handle.http_threads.push(thread),
            Err(e) => {
                // The generation thread ends only once every job sender is gone.
                drop(jobs_tx);
                drop(handle);
                return Err(ServeError::Config(format!(
                    "cannot spawn an HTTP thread: {e}"
                )));
            }
        }
    }
    drop(jobs_tx);
    tracing::info!("serving {} at http://{bound}/v1", shared.model_id);
    Ok(handle)
}

fn http_loop(
    server: &tiny_http::Server,
    stopping: &AtomicBool,
    shared: &Shared,
    jobs: &Sender<Job>,
) {
    while !stopping.load(Ordering::SeqCst) {
        match server.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(request)) => handle(request, shared, jobs),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!("serve: receiving a request failed: {e}");
            }
        }
    }
}

fn json_response(
    status: u16,
    body: &impl serde::Serialize,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
        .expect("a constant header is valid");
    tiny_http::Response::from_data(bytes)
        .with_status_code(status)
        .with_header(header)
}

fn handle(mut request: tiny_http::Request, shared: &Shared, jobs: &Sender<Job>) {
    let path = request.url().split('?').next().unwrap_or("").to_string();
    let method = request.method().clone();
    let result = match (path.trim_end_matches('/'), &method) {
        ("/v1/chat/completions", tiny_http::Method::Post) => chat(&mut request, shared, jobs),
        ("/v1/models", tiny_http::Method::Get) => Ok(json_response(200, &models(shared))),
        ("/health", tiny_http::Method::Get) => {
            Ok(json_response(200, &serde_json::json!({"status": "ok"})))
        }
        ("/v1/chat/completions" | "/v1/models" | "/health", _) => Err(ApiError::new(
            405,
            format!("method {method} is not allowed on {path}"),
        )),
        _ => Err(ApiError::new(404, format!("no route {method} {path}"))),
    };
    let response = result.unwrap_or_else(|e| json_response(e.status, &e.body()));
    if let Err(e) = request.respond(response) {
        tracing::debug!("serve: client went away before the answer: {e}");
    }
}

fn models(shared: &Shared) -> ModelList {
    ModelList {
        object: "list".into(),
        data: vec![ModelInfo {
            id: shared.model_id.clone(),
            object: "model".into(),
            created: shared.started,
            owned_by: "quester".into(),
        }],
    }
}

fn chat(
    request: &mut tiny_http::Request,
    shared: &Shared,
    jobs: &Sender<Job>,
) -> Result<tiny_http::Response<std::io::Cursor<Vec<u8>>>, ApiError> {
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
    let (reply_tx, reply_rx) = mpsc::channel();
    jobs.send(Job {
        sequences: parsed.sequences,
        reply: reply_tx,
    })
    .map_err(|_| ApiError::new(503, "the server is shutting down"))?;
    let outputs = reply_rx
        .recv()
        .map_err(|_| ApiError::new(500, "the generation thread stopped"))?
        .map_err(|e| ApiError::new(if e.invalid_request { 400 } else { 500 }, e.message))?;
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
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    Ok(json_response(
        200,
        &ChatCompletionResponse {
            id: format!("chatcmpl-{}-{id}", shared.started),
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
    ))
}
