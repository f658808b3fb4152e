//! `POST /v1/load_lora_adapter` and `POST /v1/unload_lora_adapter`, in vLLM's shape: a trainer
//! loads each update's PEFT adapter under a new name and then names it in its requests. The
//! server holds one adapter at a time: loading replaces the one loaded (vLLM's
//! `load_inplace`), and the change is made between batches, after the requests that came before
//! it and before those that come after.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::batcher::{AdapterChange, Work};
use super::chat::body_error;
use super::http::Shared;
use super::request::ApiError;

/// Loads (or replaces) the adapter.
pub(crate) async fn load(
    State(shared): State<Arc<Shared>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    change(&shared, body, true)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// Unloads the adapter: the base model is served again.
pub(crate) async fn unload(
    State(shared): State<Arc<Shared>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    change(&shared, body, false)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

fn text_field(obj: &serde_json::Map<String, Value>, key: &str) -> Result<String, ApiError> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => Err(ApiError::invalid(
            key,
            format!("`{key}` must be a non-empty string"),
        )),
        None => Err(ApiError::invalid(key, format!("missing field `{key}`"))),
    }
}

async fn change(
    shared: &Arc<Shared>,
    body: Result<Bytes, BytesRejection>,
    load: bool,
) -> Result<Response, ApiError> {
    let body = body.map_err(|e| body_error(&e, shared.config.max_body_bytes))?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::new(400, format!("request body is not JSON: {e}")))?;
    let obj = value
        .as_object()
        .ok_or_else(|| ApiError::new(400, "request body must be a JSON object"))?;
    let name = text_field(obj, "lora_name")?;
    let dir = if load {
        let path = PathBuf::from(text_field(obj, "lora_path")?);
        if !path.join("adapter_config.json").is_file() {
            return Err(ApiError::invalid(
                "lora_path",
                format!(
                    "{} is not a PEFT adapter directory (no adapter_config.json)",
                    path.display()
                ),
            ));
        }
        Some(path)
    } else {
        None
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let work = Work::Adapter(AdapterChange {
        name: name.clone(),
        dir,
        reply,
    });
    if shared.jobs.send(work).is_err() {
        return Err(ApiError::new(503, "the server is shutting down"));
    }
    match answer.await {
        Ok(Ok(())) => {
            let did = if load { "added" } else { "removed" };
            Ok(format!("Success: LoRA adapter '{name}' {did} successfully.").into_response())
        }
        Ok(Err(e)) => Err(ApiError::new(
            if e.invalid_request { 400 } else { 500 },
            e.message,
        )),
        Err(_) => Err(ApiError::new(500, "the generation thread stopped")),
    }
}
