//! OpenAI-compatible chat completions: the wire protocol (shared with [`crate::server`]) and a
//! blocking client used as an evaluation policy against any server (llama.cpp server, vLLM,
//! Ollama, `quester serve`).

mod client;
mod config;
mod error;
mod policy;
pub mod protocol;

pub use client::{parse_chat_reply, ChatParams, ChatReply, OpenAiClient};
pub use config::OpenAiConfig;
pub use error::OpenAiError;
pub use policy::OpenAiPolicy;
