//! Orchestration: rollouts over many environments, LaMer trials, the training loop.
pub mod openai;
pub mod report;
pub mod serve;
