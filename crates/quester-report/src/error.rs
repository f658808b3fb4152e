//! Errors of the report writer.

use std::path::PathBuf;

/// What went wrong writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The directory has neither metrics.jsonl nor trajectories.jsonl.
    #[error("{path} is not a run directory: it has neither metrics.jsonl nor trajectories.jsonl")]
    NotARunDir {
        /// The directory.
        path: PathBuf,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Drawing a plot failed.
    #[error("plot {family}: {message}")]
    Plot {
        /// The metric family being drawn.
        family: String,
        /// Why.
        message: String,
    },
}

impl ReportError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
