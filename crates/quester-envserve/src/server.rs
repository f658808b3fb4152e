//! The server: routes, shared state, binding and running.

use crate::capacity::Slots;
use crate::config::{Mode, ServerConfig};
use crate::error::ServeError;
use crate::mcp::McpSessions;
use crate::session::Session;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// What every handler shares.
pub struct App {
    pub config: ServerConfig,
    pub slots: Arc<Slots>,
    /// `GET /metadata`'s body, fixed at start.
    pub metadata: Value,
    /// The HTTP MCP sessions (`/mcp`'s `openenv/session/create`).
    pub mcp: McpSessions,
}

/// A bound server, not yet answering.
pub struct Server {
    listener: TcpListener,
    router: Router,
}

impl Server {
    /// Builds the env once (a bad name or setting fails here, not in the first session) and
    /// binds `addr` (port 0: any free port).
    pub async fn bind(config: ServerConfig, addr: &str) -> Result<Server, ServeError> {
        let template = config.env.clone();
        let metadata = tokio::task::spawn_blocking(move || {
            let session = Session::new(template.clone()).map_err(|source| ServeError::Env {
                env: template.name.clone(),
                source,
            })?;
            Ok::<_, ServeError>(metadata(&template.name, &session))
        })
        .await
        .map_err(ServeError::Panicked)??;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        let app = Arc::new(App {
            // Zero would refuse every session; the CLI rejects it, a library caller gets one.
            slots: Slots::new(config.max_sessions.max(1)),
            metadata,
            config,
            mcp: McpSessions::default(),
        });
        crate::mcp::spawn_reaper(&app);
        Ok(Server {
            listener,
            router: router(app),
        })
    }

    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener.local_addr().map_err(ServeError::Serve)
    }

    /// Answers until `shutdown` completes.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(ServeError::Serve)
    }
}

fn metadata(name: &str, session: &Session) -> Value {
    json!({
        "name": name,
        "description": format!(
            "quester's `{name}` text environment: the action is the model's whole response, \
             from which the env parses its move"
        ),
        "readme_content": session.rules(),
        "version": env!("CARGO_PKG_VERSION"),
    })
}

fn router(app: Arc<App>) -> Router {
    let mut router = Router::new()
        .route("/ws", get(crate::ws::upgrade))
        .route("/health", get(crate::http::health))
        .route("/metadata", get(crate::http::metadata))
        .route("/schema", get(crate::http::schema))
        .route("/openapi.json", get(crate::http::openapi))
        .route("/mcp", post(crate::mcp::endpoint));
    if app.config.mode == Mode::Simulation {
        router = router
            .route("/reset", post(crate::http::reset))
            .route("/step", post(crate::http::step))
            .route("/state", get(crate::http::state));
    }
    // Bodies over the message limit get 413 before they are read whole.
    let limit = app.config.max_message_bytes;
    router.layer(DefaultBodyLimit::max(limit)).with_state(app)
}
