//! The crate's one error type. Every variant names what the caller has to fix (the id, the
//! argument key, the line number) and keeps the underlying error as its `source`.

use std::path::PathBuf;

use crate::INSTRUCTION_IDS;

/// Errors from building instructions, parsing prompt data and reading response files.
#[derive(Debug, thiserror::Error)]
pub enum IfevalError {
    /// The instruction id is not one of IFEval's 25.
    #[error("unknown IFEval instruction id {id:?}; the known ids are: {}", INSTRUCTION_IDS.join(", "))]
    UnknownId { id: String },
    /// A required argument is absent (or null).
    #[error("instruction {id}: missing argument `{key}`")]
    MissingArgument { id: &'static str, key: &'static str },
    /// An argument has the wrong type or an impossible value.
    #[error("instruction {id}: argument `{key}` {problem}")]
    BadArgument {
        id: &'static str,
        key: &'static str,
        problem: String,
    },
    /// One entry of a prompt's instruction list could not be built.
    #[error("prompt {key}: instruction #{index} ({id})")]
    PromptInstruction {
        key: u64,
        index: usize,
        id: String,
        #[source]
        source: Box<IfevalError>,
    },
    /// A JSONL line is not valid JSON (or not of the expected shape).
    #[error("{what} line {line}: not a valid record")]
    Json {
        what: &'static str,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    /// A JSONL line is well-formed JSON but its content is wrong.
    #[error("{what} line {line}: {message}")]
    Line {
        what: &'static str,
        line: usize,
        message: String,
    },
    /// A line of a prompt file could not be turned into a prompt.
    #[error("prompt data line {line}")]
    PromptLine {
        line: usize,
        #[source]
        source: Box<IfevalError>,
    },
    /// A response file does not answer every IFEval prompt.
    #[error("{missing} of the {total} IFEval prompts have no response (first missing keys: {examples:?})")]
    MissingResponses {
        missing: usize,
        total: usize,
        examples: Vec<u64>,
    },
    /// Reading or writing a file failed.
    #[error("{}: {action}", path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
}
