//! Errors of the training crate.

/// Anything that stops a rollout, a training run or an evaluation.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error(transparent)]
    ConfigFile(#[from] quester_config::ConfigError),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Env(#[from] quester_envs::EnvError),
    #[error("policy: {0}")]
    Policy(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Corrupt { path: String, message: String },
    #[error("resume: {0}")]
    Resume(String),
    /// Boxed: the embedder's error is large, and every `Result` of the crate carries this type.
    #[error("sentence embeddings: {0}")]
    Embed(#[source] Box<quester_embed::EmbedError>),
    /// The model engine's own error (generation), its chain kept.
    #[error("policy: {0}")]
    Model(#[source] Box<quester_model::ModelError>),
}

impl From<quester_model::ModelError> for TrainError {
    fn from(e: quester_model::ModelError) -> Self {
        TrainError::Model(Box::new(e))
    }
}

impl From<quester_embed::EmbedError> for TrainError {
    fn from(e: quester_embed::EmbedError) -> Self {
        TrainError::Embed(Box::new(e))
    }
}

impl TrainError {
    /// An I/O error naming the path.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        TrainError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
