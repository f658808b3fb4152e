//! `serve`: the native model behind an OpenAI-compatible HTTP API (`POST /v1/chat/completions`,
//! `GET /v1/models`). Requests that arrive together are generated as one batch.

mod backend;
mod batcher;
mod config;
mod request;
mod server;

pub use backend::{BackendError, ChatBackend, GenerationOutput, GenerationRequest};
pub use config::ServeConfig;
pub use request::{parse_chat_request, ApiError, ParsedRequest, MAX_CHOICES};
pub use server::{serve_backend, ServeError, ServerHandle};
