//! quester over HTTP, both ways, above the trainer: [`server`] puts any trainer
//! [`Policy`](quester_train::policy::Policy) behind an OpenAI-compatible chat-completions API
//! (`quester serve`), and [`openai`] is the blocking client of such an API, usable as an
//! evaluation policy against any server (llama.cpp, vLLM, Ollama, `quester serve`).
//!
//! Kept out of quester-train so the training loop builds without an HTTP stack; the wire
//! protocol ([`openai::protocol`]) is shared by both sides.

pub mod openai;
pub mod server;
