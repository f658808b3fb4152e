//! The HTTP side of `serve`: routes, JSON answers, the server's lifetime.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::backend::{ChatBackend, ChatCodec};
use super::batcher::{run_generation, Job};
use super::chat::chat;
use super::queue::{Queue, ServeStats};
use super::request::ApiError;
use super::ServeConfig;
use crate::openai::protocol::{ModelInfo, ModelList};

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
    queue: Arc<Queue>,
}

impl ServerHandle {
    /// The server's counters now (also reported by `GET /health`).
    pub fn stats(&self) -> ServeStats {
        self.queue.stats()
    }

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

    /// Stops accepting requests, lets the running requests finish, joins every thread.
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
        // Every job sender is gone now, so the generation thread ends once nothing is left.
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
pub(crate) struct Shared {
    pub config: ServeConfig,
    pub model_id: String,
    pub started: u64,
    pub next_seed: AtomicU64,
    pub next_id: AtomicU64,
    pub queue: Arc<Queue>,
    /// The backend's prompt checker and detokenizer, when it has one.
    pub codec: Option<Arc<dyn ChatCodec>>,
}

pub(crate) fn unix_now() -> u64 {
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
    if config.max_queue == 0 {
        return Err(ServeError::Config("max_queue: must be at least 1".into()));
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
    type Ready = Result<Option<Arc<dyn ChatCodec>>, String>;
    let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
    let max_batch = config.max_batch;
    let queue = Arc::new(Queue::new(config.max_queue));
    let gen_queue = Arc::clone(&queue);
    let generation_thread = std::thread::Builder::new()
        .name("serve-generate".into())
        .spawn(move || match make() {
            Ok(backend) => {
                let _ = ready_tx.send(Ok(backend.codec()));
                run_generation(backend, jobs_rx, max_batch, gen_queue);
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        })
        .map_err(|e| ServeError::Config(format!("cannot spawn the generation thread: {e}")))?;
    let ready = ready_rx
        .recv()
        .unwrap_or_else(|_| Err("the model builder panicked".to_string()));
    let codec = match ready {
        Ok(codec) => codec,
        Err(e) => {
            let _ = generation_thread.join();
            return Err(ServeError::Model(e));
        }
    };
    let server = Arc::new(server);
    let stopping = Arc::new(AtomicBool::new(false));
    let shared = Arc::new(Shared {
        model_id: model_id.to_string(),
        started: unix_now(),
        // Seeds for requests without one: a fixed sequence from the configured seed.
        next_seed: AtomicU64::new(config.seed),
        next_id: AtomicU64::new(0),
        config: config.clone(),
        queue: Arc::clone(&queue),
        codec,
    });
    let mut handle = ServerHandle {
        addr: bound,
        server,
        stopping,
        http_threads: Vec::with_capacity(config.http_threads),
        generation_thread: Some(generation_thread),
        queue,
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

pub(crate) fn json_response(
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

/// Answers `request` with `result` (an error in OpenAI's shape).
pub(crate) fn respond(
    request: tiny_http::Request,
    result: Result<tiny_http::Response<std::io::Cursor<Vec<u8>>>, ApiError>,
) {
    let response = result.unwrap_or_else(|e| {
        let r = json_response(e.status, &e.body());
        if e.status == 429 {
            let retry = tiny_http::Header::from_bytes(&b"Retry-After"[..], &b"1"[..])
                .expect("a constant header is valid");
            r.with_header(retry)
        } else {
            r
        }
    });
    if let Err(e) = request.respond(response) {
        tracing::debug!("serve: client went away before the answer: {e}");
    }
}

fn handle(request: tiny_http::Request, shared: &Shared, jobs: &Sender<Job>) {
    let path = request.url().split('?').next().unwrap_or("").to_string();
    let method = request.method().clone();
    let result = match (path.trim_end_matches('/'), &method) {
        ("/v1/chat/completions", tiny_http::Method::Post) => return chat(request, shared, jobs),
        ("/v1/models", tiny_http::Method::Get) => Ok(json_response(200, &models(shared))),
        ("/health", tiny_http::Method::Get) => Ok(json_response(
            200,
            &serde_json::json!({"status": "ok", "stats": shared.queue.stats()}),
        )),
        ("/v1/chat/completions" | "/v1/models" | "/health", _) => Err(ApiError::new(
            405,
            format!("method {method} is not allowed on {path}"),
        )),
        _ => Err(ApiError::new(404, format!("no route {method} {path}"))),
    };
    respond(request, result);
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
