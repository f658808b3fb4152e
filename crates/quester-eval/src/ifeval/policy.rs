//! The policy that answers: a remote server, a run's checkpoint, or a model file (the default
//! model when none is named), each built untrained for generation only.

use std::path::{Path, PathBuf};

use quester_serve::openai::{OpenAiConfig, OpenAiPolicy};
use quester_train::config::TrainMode;
use quester_train::policy::{GenRequest, Generation, OnStep, Policy, TrainablePolicy};
use quester_train::{TrainConfig, TrainError};

use crate::EvalError;

/// Which policy answers the prompts.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicySource {
    /// An OpenAI-compatible server's base URL (e.g. http://127.0.0.1:8080/v1) and the model id
    /// sent to it.
    Server { url: String, model: String },
    /// A run's checkpoint folder or its `checkpoints/latest` pointer: the run's model with those
    /// weights, on `device` (cpu, cuda or cuda:N).
    Checkpoint { path: PathBuf, device: String },
    /// A GGUF file or Hugging Face folder; `None`: the default model (fetched if missing).
    /// `precision`: how its products multiply (`model.precision`).
    Model {
        path: Option<PathBuf>,
        device: String,
        precision: quester_model::PrecisionChoice,
    },
}

/// The policy `source` names, and a description of it for the settings.
pub(crate) fn build(source: &PolicySource) -> Result<(Box<dyn Policy>, String), EvalError> {
    match source {
        PolicySource::Server { url, model } => {
            let cfg = OpenAiConfig {
                base_url: url.clone(),
                model: model.clone(),
                ..OpenAiConfig::default()
            };
            let p = OpenAiPolicy::new(cfg)?;
            Ok((Box::new(p), format!("server {url} model {model}")))
        }
        PolicySource::Checkpoint { path, device } => {
            let dir = quester_train::locate::resolve_checkpoint(path)?;
            // RUN_DIR/checkpoints/step_NNNNNN: the run's own config knows the model and adapters.
            let run_dir = dir
                .parent()
                .and_then(Path::parent)
                .ok_or(EvalError::NotInARun)?;
            let cfg_path = quester_train::run_dir::RunDir::new(run_dir).config_path();
            let mut cfg =
                TrainConfig::load(&cfg_path, &[]).map_err(|source| EvalError::RunConfig {
                    path: cfg_path.clone(),
                    source: Box::new(source),
                })?;
            cfg.model.device = device.clone();
            let mut p = quester_train::api::build_policy(&cfg)?;
            p.load(&dir).map_err(|source| EvalError::Checkpoint {
                path: dir.clone(),
                source: Box::new(source),
            })?;
            Ok((
                Box::new(Untrained(p)),
                format!("checkpoint {}", dir.display()),
            ))
        }
        PolicySource::Model {
            path,
            device,
            precision,
        } => {
            let mut cfg = TrainConfig::default();
            cfg.model.train = TrainMode::Full;
            cfg.model.device = device.clone();
            cfg.model.precision = *precision;
            if let Some(m) = path {
                cfg.model.path = m.display().to_string();
            }
            let p = quester_train::api::build_policy(&cfg)?;
            let what = match path {
                Some(m) => format!("model {}", m.display()),
                None => "default model (SmolLM2-135M-Instruct)".to_string(),
            };
            let what = match precision {
                quester_model::PrecisionChoice::F32 => what,
                other => format!("{what}, precision {other:?}"),
            };
            Ok((Box::new(Untrained(p)), what))
        }
    }
}

/// A trainable policy used for generation only.
struct Untrained(Box<dyn TrainablePolicy>);

impl Policy for Untrained {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        self.0.generate(requests)
    }

    // The model's own per-token-step scheduling, not the trait's batch-at-a-time default.
    fn generate_continuous(
        &mut self,
        first: Vec<(u64, GenRequest)>,
        on_step: &mut OnStep<'_>,
    ) -> Result<(), TrainError> {
        self.0.generate_continuous(first, on_step)
    }
}
