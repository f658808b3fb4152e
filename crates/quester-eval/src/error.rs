//! Errors of the benchmarks.

use std::path::PathBuf;

/// Why a benchmark run failed.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The policy failed to build, load or generate. (Boxed, as in every variant holding a
    /// `TrainError`: it is large.)
    #[error(transparent)]
    Train(Box<quester_train::TrainError>),
    #[error(transparent)]
    Locate(#[from] quester_train::locate::LocateError),
    #[error("the OpenAI-compatible server: {0}")]
    Server(#[from] quester_serve::openai::OpenAiError),
    #[error(transparent)]
    Ifeval(#[from] quester_ifeval::IfevalError),
    #[error("a checkpoint folder lies in RUN_DIR/checkpoints/")]
    NotInARun,
    #[error("the run's config {path}: {source}")]
    RunConfig {
        path: PathBuf,
        source: Box<quester_train::TrainError>,
    },
    #[error("loading checkpoint {path}: {source}")]
    Checkpoint {
        path: PathBuf,
        source: Box<quester_train::TrainError>,
    },
    #[error("{doing} {path}: {source}")]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{out} holds a partial run with other settings ({saved}); use another --out or delete it"
    )]
    OtherSettings { out: PathBuf, saved: String },
    #[error("an answer is missing after generation")]
    MissingAnswer,
}

impl From<quester_train::TrainError> for EvalError {
    fn from(e: quester_train::TrainError) -> Self {
        Self::Train(Box::new(e))
    }
}

impl EvalError {
    pub(crate) fn io<'a>(
        doing: &'static str,
        path: &'a std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Self + 'a {
        move |source| Self::Io {
            doing,
            path: path.to_path_buf(),
            source,
        }
    }
}
