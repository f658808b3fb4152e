//! `/ws`: one stateful session per connection, OpenEnv's `reset` / `step` / `state` / `close`
//! messages in, `observation` / `state` / `error` replies out.

use crate::error::{ErrorCode, RequestError};
use crate::server::App;
use crate::session::Session;
use crate::wire::{parse_message, Incoming};
use crate::ws_reader::Reader;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::Arc;

/// The transport reads messages up to this many times the app's limit, so that an oversize
/// action still arrives whole and gets an error reply instead of a dropped connection.
const TRANSPORT_FACTOR: usize = 16;

/// WebSocket close code for "message too big" (RFC 6455), the usual reason a read fails.
const CLOSE_TOO_BIG: u16 = 1009;

pub async fn upgrade(State(app): State<Arc<App>>, ws: WebSocketUpgrade) -> Response {
    let limit = app
        .config
        .max_message_bytes
        .saturating_mul(TRANSPORT_FACTOR);
    ws.max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| run(app, socket))
}

/// Sends one reply; false when the client is gone.
async fn send(socket: &mut WebSocket, kind: &str, data: Value) -> bool {
    let text = json!({"type": kind, "data": data}).to_string();
    socket.send(Message::Text(text.into())).await.is_ok()
}

async fn send_error(socket: &mut WebSocket, code: ErrorCode, message: &str) -> bool {
    let data = json!({"message": message, "code": code.as_str()});
    send(socket, "error", data).await
}

/// Ends a refused or broken session the way OpenEnv does: an error frame, then a close.
async fn refuse(mut socket: WebSocket, data: Value, close_code: Option<u16>) {
    let _ = send(&mut socket, "error", data).await;
    let frame = close_code.map(|code| CloseFrame {
        code,
        reason: "".into(),
    });
    let _ = socket.send(Message::Close(frame)).await;
}

async fn run(app: Arc<App>, mut socket: WebSocket) {
    let Some(slot) = app.slots.try_acquire() else {
        let data = json!({
            "message": format!("Server at capacity ({} sessions)", app.slots.max()),
            "code": ErrorCode::CapacityReached.as_str(),
            "active_sessions": app.slots.active(),
            "max_sessions": app.slots.max(),
        });
        tracing::info!("session refused: at capacity");
        refuse(socket, data, None).await;
        return;
    };
    let template = app.config.env.clone();
    let session = match tokio::task::spawn_blocking(move || Session::new(template)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::warn!("building the env failed: {e}");
            let data = json!({
                "message": e.to_string(),
                "code": ErrorCode::FactoryError.as_str(),
                "factory_name": app.config.env.name,
            });
            refuse(socket, data, None).await;
            return;
        }
        Err(e) => {
            tracing::warn!("building the env panicked: {e}");
            let data = json!({
                "message": "building the env panicked",
                "code": ErrorCode::FactoryError.as_str(),
                "factory_name": app.config.env.name,
            });
            refuse(socket, data, None).await;
            return;
        }
    };
    tracing::debug!(active = app.slots.active(), "session opened");
    let session = serve_messages(&app, &mut socket, session).await;
    // Dropping an env may block (ScienceWorld stops its JVM); the slot is freed after it.
    if let Some(session) = session {
        let _ = tokio::task::spawn_blocking(move || drop(session)).await;
    }
    let _ = socket.send(Message::Close(None)).await;
    drop(slot);
    tracing::debug!(active = app.slots.active(), "session closed");
}

/// Answers messages until the client closes or leaves; gives back the session unless an env
/// call panicked and took it.
async fn serve_messages(app: &App, socket: &mut WebSocket, session: Session) -> Option<Session> {
    let limit = app.config.max_message_bytes;
    let mut session = session;
    let mut reader = Reader::new(socket);
    loop {
        let msg = match app.config.idle_timeout {
            None => reader.next().await,
            Some(idle) => match tokio::time::timeout(idle, reader.next()).await {
                Ok(msg) => msg,
                Err(_) => {
                    let msg = format!("no message for {idle:?}: the session is closed");
                    let _ = send_error(reader.socket, ErrorCode::SessionError, &msg).await;
                    return Some(session);
                }
            },
        };
        let socket = &mut *reader.socket;
        let text = match msg {
            None | Some(Ok(Message::Close(_))) => return Some(session),
            Some(Err(e)) => {
                // Beyond the transport's limit, or a broken frame: the connection cannot
                // go on. Say why, if the client still listens.
                tracing::debug!("websocket read failed: {e}");
                let transport = limit.saturating_mul(TRANSPORT_FACTOR);
                let message =
                    format!("unreadable message (over {transport} bytes, or a broken frame): {e}");
                let data = json!({"message": message, "code": ErrorCode::SessionError.as_str()});
                let _ = send(socket, "error", data).await;
                let frame = CloseFrame {
                    code: CLOSE_TOO_BIG,
                    reason: "".into(),
                };
                let _ = socket.send(Message::Close(Some(frame))).await;
                return Some(session);
            }
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Binary(_))) => {
                let msg = "binary frames are not read: send JSON as a text frame";
                if !send_error(socket, ErrorCode::ValidationError, msg).await {
                    return Some(session);
                }
                continue;
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
        };
        if text.len() > limit {
            let msg = format!(
                "message of {} bytes is over the limit of {limit} bytes",
                text.len()
            );
            if !send_error(socket, ErrorCode::ValidationError, &msg).await {
                return Some(session);
            }
            continue;
        }
        let incoming = match parse_message(text.as_str()) {
            Ok(i) => i,
            Err(e) => {
                if !send(socket, "error", e.to_data()).await {
                    return Some(session);
                }
                continue;
            }
        };
        let (kind, result) = match incoming {
            Incoming::Close => return Some(session),
            Incoming::State => ("state", Ok(session.state())),
            Incoming::Reset(params) => {
                let call = on_blocking_thread(session, move |s| s.reset(params));
                let Some((s, r)) = reader.during(call).await else {
                    return lost(reader.socket).await;
                };
                session = s;
                ("observation", r)
            }
            Incoming::Step(response) => {
                let call = on_blocking_thread(session, move |s| s.step(&response));
                let Some((s, r)) = reader.during(call).await else {
                    return lost(reader.socket).await;
                };
                session = s;
                ("observation", r)
            }
        };
        let sent = match result {
            Ok(data) => send(reader.socket, kind, data).await,
            Err(e) => send(reader.socket, "error", e.to_data()).await,
        };
        if !sent {
            return Some(session);
        }
    }
}

/// Tells the client its env failed for good (a panic took the session).
async fn lost(socket: &mut WebSocket) -> Option<Session> {
    let msg = "the environment failed (it panicked); the session is closed";
    let _ = send_error(socket, ErrorCode::SessionError, msg).await;
    None
}

/// Runs a session call off the async runtime (envs are synchronous and may be slow). `None`
/// when the env panicked: the session is gone with it.
async fn on_blocking_thread<F>(
    mut session: Session,
    call: F,
) -> Option<(Session, Result<Value, RequestError>)>
where
    F: FnOnce(&mut Session) -> Result<Value, RequestError> + Send + 'static,
{
    let joined = tokio::task::spawn_blocking(move || {
        let result = call(&mut session);
        (session, result)
    })
    .await;
    match joined {
        Ok(pair) => Some(pair),
        Err(e) => {
            tracing::error!("an env call panicked: {e}");
            None
        }
    }
}
