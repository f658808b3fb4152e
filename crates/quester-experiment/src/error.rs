//! The error type of experiments; every variant names the plan key, run or file at fault.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The plan file is malformed or inconsistent; the message names the key.
    #[error("plan {path}: {message}")]
    Plan { path: String, message: String },
    /// A run's config (its preset plus the plan's overrides) does not load or validate.
    #[error("plan {path}: run `{run}` (seed {seed}): {source}")]
    RunConfig {
        path: String,
        run: String,
        seed: u64,
        #[source]
        source: Box<quester_train::TrainError>,
    },
    /// Training or evaluating one unit of the plan failed.
    #[error("{unit}: {source}")]
    Unit {
        unit: String,
        #[source]
        source: Box<quester_train::TrainError>,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A result file of a finished unit is missing or malformed.
    #[error("{path}: {message}")]
    Results { path: PathBuf, message: String },
    #[error("statistics of {what}: {source}")]
    Stats {
        what: String,
        #[source]
        source: quester_algos::AlgoError,
    },
    #[error("plot {name}: {message}")]
    Plot { name: String, message: String },
}

impl ExperimentError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn results(path: &Path, message: impl Into<String>) -> Self {
        Self::Results {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}
