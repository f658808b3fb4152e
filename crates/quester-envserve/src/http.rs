//! OpenEnv's HTTP endpoints. `/reset`, `/step` and `/state` are stateless, as in OpenEnv's
//! simulation mode: each request gets a fresh env that is dropped after it; episodes need
//! `/ws`.

use crate::error::{FieldError, RequestError};
use crate::server::App;
use crate::session::{on_fresh_session, Session};
use crate::wire::{parse_action, parse_reset, ResetParams};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The seed `/step` resets its fresh env with when the request names none.
const DEFAULT_STEP_SEED: u64 = 0;

/// FastAPI's error bodies: 422 with pydantic-style `detail` entries for bad requests, 500 with
/// a message for failures while running the env.
fn error_response(e: &RequestError) -> Response {
    match e {
        RequestError::Validation(errors) => {
            let detail: Vec<Value> = errors.iter().map(FieldError::to_json).collect();
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(json!({"detail": detail})),
            )
                .into_response()
        }
        RequestError::InvalidJson(_) | RequestError::UnknownType(_) => {
            let detail = FieldError::new(&["body"], "json_invalid", e.to_string());
            let body = json!({"detail": [detail.to_json()]});
            (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response()
        }
        RequestError::Execution { .. } => {
            let body = json!({"detail": e.to_string()});
            (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response()
        }
    }
}

/// The request body as a JSON object; an empty body is `{}` (OpenEnv's `/reset` takes none).
fn body_object(body: &[u8]) -> Result<Map<String, Value>, RequestError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body).map_err(RequestError::InvalidJson)? {
        Value::Object(m) => Ok(m),
        _ => Err(RequestError::validation(
            &["body"],
            "dict_type",
            "Input should be a valid dictionary",
        )),
    }
}

/// Runs `call` on a fresh session on a blocking thread.
async fn with_fresh_session<F>(app: &App, call: F) -> Response
where
    F: FnOnce(&mut Session) -> Result<Value, RequestError> + Send + 'static,
{
    match on_fresh_session(app.config.env.clone(), call).await {
        Ok(Ok(value)) => Json(value).into_response(),
        Ok(Err(e)) => error_response(&e),
        Err(e) => {
            tracing::error!("an env call panicked: {e}");
            error_response(&RequestError::execution("the environment panicked"))
        }
    }
}

pub async fn reset(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let params = match body_object(&body).and_then(parse_reset) {
        Ok(p) => p,
        Err(e) => return error_response(&e),
    };
    with_fresh_session(&app, move |s| s.reset(params)).await
}

/// One step on a fresh env, reset first with the request's `seed` (our addition to OpenEnv's
/// `StepRequest`, whose extra fields are allowed; default 0): a stateless step is all HTTP
/// offers.
pub async fn step(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let parsed = body_object(&body).and_then(|mut m| {
        let seed = parse_reset(m.remove("seed").map_or_else(Map::new, |seed| {
            Map::from_iter([("seed".to_string(), seed)])
        }))?
        .seed;
        let action = match m.remove("action") {
            Some(Value::Object(a)) => parse_action(a, &["body", "action"])?,
            Some(_) => {
                return Err(RequestError::validation(
                    &["body", "action"],
                    "dict_type",
                    "Input should be a valid dictionary",
                ))
            }
            None => {
                return Err(RequestError::validation(
                    &["body", "action"],
                    "missing",
                    "Field required",
                ))
            }
        };
        Ok((seed.unwrap_or(DEFAULT_STEP_SEED), action))
    });
    let (seed, action) = match parsed {
        Ok(p) => p,
        Err(e) => return error_response(&e),
    };
    with_fresh_session(&app, move |s| {
        let params = ResetParams {
            seed: Some(seed),
            ..ResetParams::default()
        };
        s.reset(params)?;
        s.step(&action)
    })
    .await
}

pub async fn state(State(app): State<Arc<App>>) -> Response {
    with_fresh_session(&app, |s| Ok(s.state())).await
}

pub async fn health() -> Json<Value> {
    Json(json!({"status": "healthy"}))
}

pub async fn metadata(State(app): State<Arc<App>>) -> Json<Value> {
    Json(app.metadata.clone())
}

pub async fn schema() -> Json<Value> {
    Json(crate::schema::schemas())
}

pub async fn openapi(State(app): State<Arc<App>>) -> Json<Value> {
    Json(crate::schema::openapi(app.config.mode))
}
