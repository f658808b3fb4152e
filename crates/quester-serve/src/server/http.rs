//! The HTTP side of `serve`: the listener, one thread per open connection (at most
//! `http_threads`), routes, the server's lifetime.

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::backend::{ChatBackend, ChatCodec};
use super::batcher::{run_generation, Job};
use super::chat::chat;
use super::queue::{Queue, ServeStats};
use super::request::ApiError;
use super::wire::{Connection, HttpRequest, ReadError, Response};
use super::ServeConfig;
use crate::openai::protocol::{ModelInfo, ModelList};

/// How long a kept-alive connection may sit idle before the server closes it (it holds one of
/// the `http_threads`).
const IDLE: Duration = Duration::from_secs(30);

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
    stopping: Arc<AtomicBool>,
    accept_thread: Option<JoinHandle<()>>,
    generation_thread: Option<JoinHandle<()>>,
    queue: Arc<Queue>,
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

    /// The server's counters now (also reported by `GET /health`).
    pub fn stats(&self) -> ServeStats {
        self.queue.stats()
    }

    /// Blocks until the server stops (it runs until the process ends; the CLI simply waits
    /// here).
    pub fn wait(mut self) {
        if let Some(t) = self.accept_thread.take() {
            let _ = t.join();
        }
        if let Some(t) = self.generation_thread.take() {
            let _ = t.join();
        }
    }

    /// Stops accepting requests, closes every connection (what their requests still had
    /// queued or running is dropped), joins every thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // The accept thread blocks in accept(): a connection wakes it.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(t) = self.accept_thread.take() {
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
    let bind_error = |e: std::io::Error| ServeError::Bind {
        addr: addr.to_string(),
        message: e.to_string(),
    };
    let listener = TcpListener::bind(addr).map_err(bind_error)?;
    let bound = listener.local_addr().map_err(bind_error)?;
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
    let accept_stopping = Arc::clone(&stopping);
    let accept_shared = Arc::clone(&shared);
    let accept_thread = std::thread::Builder::new()
        .name("serve-accept".into())
        .spawn(move || accept_loop(&listener, &accept_stopping, &accept_shared, &jobs_tx));
    let accept_thread = match accept_thread {
        Ok(t) => t,
        Err(e) => {
            // The job sender went with the failed closure: the generation thread ends.
            let _ = generation_thread.join();
            return Err(ServeError::Config(format!(
                "cannot spawn the accept thread: {e}"
            )));
        }
    };
    tracing::info!("serving {} at http://{bound}/v1", shared.model_id);
    Ok(ServerHandle {
        addr: bound,
        stopping,
        accept_thread: Some(accept_thread),
        generation_thread: Some(generation_thread),
        queue,
    })
}

/// The open connections, to close them when the server stops.
#[derive(Default)]
struct Open {
    next: u64,
    streams: HashMap<u64, TcpStream>,
}

/// Accepts connections until the server stops, one thread each; then closes every connection
/// and joins their threads.
fn accept_loop(
    listener: &TcpListener,
    stopping: &AtomicBool,
    shared: &Arc<Shared>,
    jobs: &Sender<Job>,
) {
    let open = Arc::new(Mutex::new(Open::default()));
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("serve: accepting a connection failed: {e}");
                continue;
            }
        };
        threads.retain(|t| !t.is_finished());
        if threads.len() >= shared.config.http_threads {
            // Every thread holds a connection: refuse this one rather than leave it unread.
            let body = ApiError::new(503, "too many open connections; retry later").body();
            let _ = Response::json(503, &body).write(&mut &stream, false);
            continue;
        }
        let id = {
            let mut o = open.lock().unwrap_or_else(PoisonError::into_inner);
            let id = o.next;
            o.next += 1;
            if let Ok(clone) = stream.try_clone() {
                o.streams.insert(id, clone);
            }
            id
        };
        let (shared, jobs, open_c) = (Arc::clone(shared), jobs.clone(), Arc::clone(&open));
        let spawned = std::thread::Builder::new()
            .name("serve-http".into())
            .spawn(move || {
                serve_connection(stream, &shared, &jobs);
                open_c
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .streams
                    .remove(&id);
            });
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => {
                tracing::warn!("serve: cannot spawn a connection thread: {e}");
                open.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .streams
                    .remove(&id);
            }
        }
    }
    for (_, s) in open
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .streams
        .drain()
    {
        let _ = s.shutdown(Shutdown::Both);
    }
    for t in threads {
        let _ = t.join();
    }
}

/// Answers the requests of one connection until it closes.
fn serve_connection(stream: TcpStream, shared: &Shared, jobs: &Sender<Job>) {
    let _ = stream.set_read_timeout(Some(IDLE));
    let _ = stream.set_nodelay(true);
    let Ok(mut conn) = Connection::new(stream) else {
        return;
    };
    loop {
        let request = match conn.read_request(shared.config.max_body_bytes) {
            Ok(r) => r,
            Err(ReadError::Closed) => return,
            Err(ReadError::Bad(status, message)) => {
                let body = ApiError::new(status, message).body();
                let _ = Response::json(status, &body).write(conn.writer(), false);
                conn.linger();
                return;
            }
        };
        if !handle(&mut conn, &request, shared, jobs) || !request.keep_alive {
            return;
        }
    }
}

/// Answers one request; false when the connection must close.
fn handle(
    conn: &mut Connection,
    request: &HttpRequest,
    shared: &Shared,
    jobs: &Sender<Job>,
) -> bool {
    let path = request.path.as_str();
    let method = request.method.as_str();
    let result = match (path.trim_end_matches('/'), method) {
        ("/v1/chat/completions", "POST") => return chat(conn, request, shared, jobs),
        ("/v1/models", "GET") => Ok(Response::json(200, &models(shared))),
        ("/health", "GET") => Ok(Response::json(
            200,
            &serde_json::json!({"status": "ok", "stats": shared.queue.stats()}),
        )),
        ("/v1/chat/completions" | "/v1/models" | "/health", _) => Err(ApiError::new(
            405,
            format!("method {method} is not allowed on {path}"),
        )),
        _ => Err(ApiError::new(404, format!("no route {method} {path}"))),
    };
    respond(conn, request, result)
}

/// Writes `result` (an error in OpenAI's shape); false when the connection must close.
pub(crate) fn respond(
    conn: &mut Connection,
    request: &HttpRequest,
    result: Result<Response, ApiError>,
) -> bool {
    let response = result.unwrap_or_else(|e| {
        let mut r = Response::json(e.status, &e.body());
        if e.status == 429 {
            r.headers.push(("Retry-After", "1".to_string()));
        }
        r
    });
    match response.write(conn.writer(), request.keep_alive) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!("serve: client went away before the answer: {e}");
            false
        }
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
