//! quester-serve's integration tests, one binary (one link instead of one per file).

mod bandit;
mod openai_client;
mod sample_ahead;
mod serve_api;
mod serve_native;
mod serve_policy;
mod vllm;
