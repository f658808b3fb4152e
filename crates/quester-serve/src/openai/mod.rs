//! OpenAI-compatible completions: the wire protocol (shared with [`crate::server`]), a blocking
//! client used as an evaluation policy against any server (llama.cpp server, vLLM, Ollama,
//! `quester serve`), and [`RemoteSampler`], which samples a trainer's rollouts on such servers
//! from token-id prompts.

mod client;
mod config;
mod error;
mod policy;
pub mod protocol;
mod remote_sampler;
mod segmented;

pub use client::{
    parse_chat_reply, parse_token_completion, ChatParams, ChatReply, OpenAiClient, TokenCompletion,
};
pub use config::OpenAiConfig;
pub use error::OpenAiError;
pub use policy::OpenAiPolicy;
pub use remote_sampler::{rollout_sampler, RemoteSampler};
