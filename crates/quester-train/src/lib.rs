//! Orchestration: rollouts over many environments, LaMer trials, the training loop.
//!
//! Entry points for the CLI: [`train`] (with `resume`), [`evaluate`]. Lower level:
//! [`rollout::run_trials`] plays trials with any [`policy::Policy`];
//! [`trainer::Trainer`] runs the loop with any [`policy::TrainablePolicy`] and env factory.
//!
//! What only uses a policy or a run directory sits above this crate, so the trainer builds
//! without it: the HTTP server and client (quester-serve), the run report (quester-report),
//! benchmarks such as IFEval (quester-eval).

pub mod api;
pub mod behaviour;
pub mod config;
pub mod demos;
pub mod error;
pub mod export;
pub mod locate;
pub mod method;
pub mod opponents;
pub mod policy;
pub mod prompts;
pub mod rng;
pub mod rollout;
pub mod sample;
pub mod sft;

pub use config::TrainConfig;
pub use error::TrainError;
pub mod run_dir;
pub(crate) mod scoring;
pub mod trainer;

pub use api::{
    evaluate, evaluate_subject, resume, resume_with, train, train_with, EvalReport, EvalSubject,
    PassK, SamplerFactory,
};
