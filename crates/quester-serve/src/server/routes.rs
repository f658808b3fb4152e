//! The HTTP routes of `serve`, and errors as answers in OpenAI's shape.

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use super::adapters;
use super::chat::chat;
use super::completions::completions;
use super::http::Shared;
use super::request::ApiError;
use crate::openai::protocol::{ModelInfo, ModelList};

/// The API's routes (each also with a trailing slash); anything else is a 404 and a known path
/// with another method a 405, both with an OpenAI error body.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    // Bodies over the limit get 413 before they are read whole.
    let max_body = shared.config.max_body_bytes;
    let mut router = Router::new();
    for slash in ["", "/"] {
        router = router
            .route(
                &format!("/v1/chat/completions{slash}"),
                post(chat).fallback(not_allowed),
            )
            .route(
                &format!("/v1/completions{slash}"),
                post(completions).fallback(not_allowed),
            )
            .route(
                &format!("/v1/load_lora_adapter{slash}"),
                post(adapters::load).fallback(not_allowed),
            )
            .route(
                &format!("/v1/unload_lora_adapter{slash}"),
                post(adapters::unload).fallback(not_allowed),
            )
            .route(
                &format!("/v1/models{slash}"),
                get(models).fallback(not_allowed),
            )
            .route(
                &format!("/health{slash}"),
                get(health).fallback(not_allowed),
            );
    }
    router
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(shared)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, Json(self.body())).into_response();
        if status == StatusCode::TOO_MANY_REQUESTS {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// The base model, and the adapter loaded now (which requests then name).
async fn models(State(shared): State<Arc<Shared>>) -> Json<ModelList> {
    let adapter = shared
        .adapter
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let info = |id: String| ModelInfo {
        id,
        object: "model".into(),
        created: shared.started,
        owned_by: "quester".into(),
    };
    Json(ModelList {
        object: "list".into(),
        data: std::iter::once(shared.model_id.clone())
            .chain(adapter)
            .map(info)
            .collect(),
    })
}

async fn health(State(shared): State<Arc<Shared>>) -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok", "stats": shared.queue.stats()}))
}

async fn not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        405,
        format!("method {method} is not allowed on {}", uri.path()),
    )
}

async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(404, format!("no route {method} {}", uri.path()))
}
