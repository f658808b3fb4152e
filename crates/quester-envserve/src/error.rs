//! The errors a session reports to its client, and the server's own start-up errors.

use serde_json::{json, Value};

/// OpenEnv's error codes (`WSErrorCode` in `openenv.core.env_server.types`), spelled as on the
/// wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidJson,
    UnknownType,
    ValidationError,
    ExecutionError,
    CapacityReached,
    FactoryError,
    SessionError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "INVALID_JSON",
            ErrorCode::UnknownType => "UNKNOWN_TYPE",
            ErrorCode::ValidationError => "VALIDATION_ERROR",
            ErrorCode::ExecutionError => "EXECUTION_ERROR",
            ErrorCode::CapacityReached => "CAPACITY_REACHED",
            ErrorCode::FactoryError => "FACTORY_ERROR",
            ErrorCode::SessionError => "SESSION_ERROR",
        }
    }
}

/// One field-level complaint about a request, shaped like pydantic's error entries
/// (`loc`, `msg`, `type`) because OpenEnv's clients and HTTP 422 bodies carry those.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub loc: Vec<String>,
    pub msg: String,
    pub kind: &'static str,
}

impl FieldError {
    pub fn new(loc: &[&str], kind: &'static str, msg: impl Into<String>) -> FieldError {
        FieldError {
            loc: loc.iter().map(|s| (*s).to_string()).collect(),
            msg: msg.into(),
            kind,
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"type": self.kind, "loc": self.loc, "msg": self.msg})
    }
}

/// What went wrong with one client message; it becomes an `error` reply and the session goes on.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("Invalid JSON: {0}")]
    InvalidJson(#[source] serde_json::Error),
    #[error("Unknown message type: {0}")]
    UnknownType(String),
    #[error("Invalid message: {}", summary(.0))]
    Validation(Vec<FieldError>),
    #[error("{message}")]
    Execution {
        message: String,
        #[source]
        source: Option<quester_envs::EnvError>,
    },
}

fn summary(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(|e| format!("{}: {}", e.loc.join("."), e.msg))
        .collect::<Vec<_>>()
        .join("; ")
}

impl RequestError {
    pub fn validation(loc: &[&str], kind: &'static str, msg: impl Into<String>) -> RequestError {
        RequestError::Validation(vec![FieldError::new(loc, kind, msg)])
    }

    pub fn execution(message: impl Into<String>) -> RequestError {
        RequestError::Execution {
            message: message.into(),
            source: None,
        }
    }

    pub fn env(context: &str, source: quester_envs::EnvError) -> RequestError {
        RequestError::Execution {
            message: format!("{context}: {source}"),
            source: Some(source),
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            RequestError::InvalidJson(_) => ErrorCode::InvalidJson,
            RequestError::UnknownType(_) => ErrorCode::UnknownType,
            RequestError::Validation(_) => ErrorCode::ValidationError,
            RequestError::Execution { .. } => ErrorCode::ExecutionError,
        }
    }

    /// The `data` of the WebSocket `error` reply: `message` and `code`, plus `errors` for
    /// validation failures, as OpenEnv's server sends them.
    pub fn to_data(&self) -> Value {
        let mut data = json!({"message": self.to_string(), "code": self.code().as_str()});
        if let RequestError::Validation(errors) = self {
            data["errors"] = errors.iter().map(FieldError::to_json).collect();
        }
        data
    }
}

/// The server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot build environment `{env}`")]
    Env {
        env: String,
        #[source]
        source: quester_envs::EnvError,
    },
    #[error("cannot listen on {addr}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped with an error")]
    Serve(#[source] std::io::Error),
    #[error("building the environment panicked")]
    Panicked(#[source] tokio::task::JoinError),
}
