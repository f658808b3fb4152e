//! quester's environments over OpenEnv's wire protocol (spec version 1, as `openenv` 0.10.0
//! speaks it), so that Python RL trainers (TRL, SkyRL, ART) can play them: a stateful
//! WebSocket session per connection on `/ws`, OpenEnv's stateless HTTP `/reset`, `/step`,
//! `/state`, and `/health`, `/metadata`, `/schema`, `/openapi.json`, `/mcp` (MCP tools `reset`, `step`, `state`).
//! `docs/env-server.md` describes the protocol subset.

mod blocking;
mod capacity;
pub mod config;
pub mod error;
mod http;
mod mcp;
pub mod observation;
pub mod schema;
mod served;
mod server;
pub mod session;
pub mod trial;
pub mod wire;
mod ws;
mod ws_reader;

pub use blocking::serve_until_signal;
pub use config::{Mode, ServerConfig};
pub use error::{ErrorCode, RequestError, ServeError};
pub use served::EnvTemplate;
pub use server::Server;
pub use session::Session;
pub use trial::{MemoryKind, TrialOptionError, TrialOptions};
