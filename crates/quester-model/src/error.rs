//! The one error type of the model engine.

use std::path::PathBuf;

/// Everything that can go wrong while fetching, loading or running a model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A tensor operation failed (shape mismatch, unsupported dtype, ...).
    #[error("tensor error: {0}")]
    Candle(#[from] candle_core::Error),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A model file exists but its contents are not what we need.
    #[error("{path}: {what}")]
    BadFile {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// Fetching the default model failed.
    #[error("fetching the default model: {0}")]
    Fetch(String),
    /// The downloaded model does not have the expected hash.
    #[error("{path}: sha256 mismatch (expected {expected}, got {actual})")]
    BadHash {
        /// The file checked.
        path: PathBuf,
        /// The recorded hash.
        expected: String,
        /// The hash measured.
        actual: String,
    },
    /// Tokenizer construction or encoding failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The chat template failed to parse or render.
    #[error("chat template: {0}")]
    Template(String),
    /// A configuration value is not usable.
    #[error("invalid model configuration: {0}")]
    Config(String),
    /// Invalid arguments to an engine call.
    #[error("invalid input: {0}")]
    Input(String),
}

impl ModelError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ModelError::Io {
            path: path.into(),
            source,
        }
    }

    /// A content error for a named file.
    pub fn bad_file(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        ModelError::BadFile {
            path: path.into(),
            what: what.into(),
        }
    }
}

/// Result alias of the crate.
pub type Result<T> = std::result::Result<T, ModelError>;
