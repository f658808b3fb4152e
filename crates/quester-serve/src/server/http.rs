//! The server's lifetime: the generation thread that owns the backend, the HTTP side (axum on
//! its own tokio runtime), and the handle that stops both.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::serve::ListenerExt;
use tokio::runtime::Runtime;

use super::backend::{ChatBackend, ChatCodec};
use super::batcher::{run_generation, Work};
use super::queue::{Queue, ServeStats};
use super::routes::router;
use super::ServeConfig;

/// How long stopping waits for the HTTP side's tasks to wind down.
const STOP_GRACE: Duration = Duration::from_secs(5);

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
    runtime: Option<Runtime>,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
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
        if let (Some(runtime), Some(server)) = (&self.runtime, self.server.take()) {
            if let Ok(Err(e)) = runtime.block_on(server) {
                tracing::error!("serve: the HTTP server stopped: {e}");
            }
        }
        self.stop();
    }

    /// Stops accepting requests, closes every connection (what their requests still had
    /// queued or running is dropped), joins the generation thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        // Dropping the runtime's tasks closes the listener and every connection; their
        // handlers' guards mark what they had queued or running as gone.
        if let Some(runtime) = self.runtime.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                // Inside another runtime a blocking wait would panic: let it wind down alone.
                runtime.shutdown_background();
            } else {
                runtime.shutdown_timeout(STOP_GRACE);
            }
        }
        // Every job sender went with the tasks, so the generation thread ends once nothing
        // is left.
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

/// What every handler shares.
pub(crate) struct Shared {
    pub config: ServeConfig,
    pub model_id: String,
    pub started: u64,
    pub next_seed: AtomicU64,
    pub next_id: AtomicU64,
    pub queue: Arc<Queue>,
    /// The backend's prompt checker and detokenizer, when it has one.
    pub codec: Option<Arc<dyn ChatCodec>>,
    /// Work for the generation thread. A std channel, since that thread blocks on it; sending
    /// never blocks a handler (it is unbounded: the queue limit bounds it).
    pub jobs: Sender<Work>,
    /// The LoRA adapter loaded now (set by the generation thread).
    pub adapter: Arc<Mutex<Option<String>>>,
}

impl Shared {
    /// A fresh completion id.
    pub fn completion_id(&self) -> String {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        format!("chatcmpl-{}-{id}", self.started)
    }
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
    if config.max_batch == 0 {
        return Err(ServeError::Config("max_batch: must be at least 1".into()));
    }
    if config.max_queue == 0 {
        return Err(ServeError::Config("max_queue: must be at least 1".into()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("serve-http")
        .enable_all()
        .build()
        .map_err(|e| ServeError::Config(format!("cannot start the HTTP runtime: {e}")))?;
    let bind_error = |e: std::io::Error| ServeError::Bind {
        addr: addr.to_string(),
        message: e.to_string(),
    };
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(bind_error)?;
    let bound = listener.local_addr().map_err(bind_error)?;
    let (jobs_tx, jobs_rx) = mpsc::channel::<Work>();
    let adapter = Arc::new(Mutex::new(None));
    let gen_adapter = Arc::clone(&adapter);
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
                run_generation(backend, jobs_rx, max_batch, gen_queue, gen_adapter);
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
    let shared = Arc::new(Shared {
        model_id: model_id.to_string(),
        started: unix_now(),
        // Seeds for requests without one: a fixed sequence from the configured seed.
        next_seed: AtomicU64::new(config.seed),
        next_id: AtomicU64::new(0),
        config,
        queue: Arc::clone(&queue),
        codec,
        jobs: jobs_tx,
        adapter,
    });
    tracing::info!("serving {} at http://{bound}/v1", shared.model_id);
    // Small events (a token's delta) go out at once rather than waiting for more to send.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = runtime.spawn(axum::serve(listener, router(shared)).into_future());
    Ok(ServerHandle {
        addr: bound,
        runtime: Some(runtime),
        server: Some(server),
        generation_thread: Some(generation_thread),
        queue,
    })
}
