//! The server: a policy behind an OpenAI-compatible HTTP API (`POST /v1/chat/completions`,
//! `POST /v1/completions` with token-id prompts, `POST /v1/load_lora_adapter` and
//! `/v1/unload_lora_adapter`, `GET /v1/models`, `GET /health`). Generation is one continuous batch: a request joins it at
//! the next token step and leaves it when it ends; answers come whole or streamed as
//! server-sent events, and a request whose client leaves is dropped from the batch.

mod adapters;
mod backend;
mod batcher;
mod chat;
mod completions;
mod config;
mod delta;
mod http;
mod policy_backend;
mod queue;
mod request;
mod routes;
mod sse;

pub use backend::{
    BackendError, BackendOrders, BackendStep, ChatBackend, ChatCodec, GenerationOutput,
    GenerationRequest, Progress,
};
pub use config::ServeConfig;
pub use http::{serve_backend, ServeError, ServerHandle};
pub use queue::ServeStats;

use http::serve_from;
use policy_backend::PolicyBackend;

/// Serves a trainer [`quester_train::policy::Policy`] (e.g. the one `quester_train::api::build_policy` builds,
/// with a checkpoint loaded) on `addr`. `make` runs on the generation thread, so the policy need
/// not be `Send`; its error is returned as [`ServeError::Model`]. This is the CLI's `serve`.
pub fn serve_policy<F>(
    make: F,
    model_id: &str,
    addr: &str,
    config: ServeConfig,
) -> Result<ServerHandle, ServeError>
where
    F: FnOnce() -> Result<Box<dyn quester_train::policy::Policy>, String> + Send + 'static,
{
    let id = model_id.to_string();
    serve_from(
        move || make().map(|p| Box::new(PolicyBackend::new(p, id)) as Box<dyn ChatBackend>),
        model_id,
        addr,
        config,
    )
}
