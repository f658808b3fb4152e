//! `POST /mcp`: MCP over JSON-RPC 2.0, as OpenEnv 0.10.0's HTTP server does it. The env is
//! three tools: `reset` (`seed`, `episode_id` and env settings, all optional), `step`
//! (`action`: the model's whole response) and `state`. Sessions are OpenEnv's: the method
//! `openenv/session/create` answers a `session_id`, which later calls pass in their `params`,
//! and `openenv/session/close` ends it. A session takes a `--max-sessions` slot as a WebSocket
//! session does, and `--idle-timeout` closes it. A `tools/call` without `session_id` plays a
//! fresh env dropped after the call (OpenEnv's stateless MCP calls), so only `reset` and
//! `state` are of use there. Every bad request gets a JSON-RPC error.

use crate::capacity::Slot;
use crate::error::{FieldError, RequestError};
use crate::server::App;
use crate::session::{on_fresh_session, Session};
use crate::wire::{no_other_fields, parse_reset, take_string};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
/// OpenEnv's code for a refused session (capacity, a failed env build).
const SERVER_ERROR: i64 = -32000;

/// The MCP revision `initialize` answers with.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// A JSON-RPC error reply's parts.
#[derive(Debug)]
struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    /// A session's error: bad arguments are the caller's (invalid params, with pydantic-style
    /// `errors`); an env that cannot do it (a step before reset) is an internal error, as
    /// OpenEnv reports an env's exception. `data.code` is the WebSocket error code.
    fn from_request(e: &RequestError) -> RpcError {
        let code = match e {
            RequestError::Validation(_) => INVALID_PARAMS,
            _ => INTERNAL_ERROR,
        };
        let mut data = json!({"code": e.code().as_str()});
        if let RequestError::Validation(errors) = e {
            data["errors"] = errors.iter().map(FieldError::to_json).collect();
        }
        RpcError::new(code, e.to_string()).with_data(data)
    }
}

fn reply(id: Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "result": result, "id": id}),
        Err(e) => {
            let mut error = json!({"code": e.code, "message": e.message});
            if let Some(data) = e.data {
                error["data"] = data;
            }
            json!({"jsonrpc": "2.0", "error": error, "id": id})
        }
    }
}

/// One HTTP MCP session: its env, the slot it holds, when it was last used.
struct McpSession {
    session: Mutex<Session>,
    last_used: Mutex<Instant>,
    _slot: Slot,
}

impl McpSession {
    fn touch(&self) {
        if let Ok(mut t) = self.last_used.lock() {
            *t = Instant::now();
        }
    }

    fn idle_for(&self, now: Instant) -> Duration {
        self.last_used
            .lock()
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(*t))
    }
}

/// The live HTTP MCP sessions by id.
#[derive(Default)]
pub struct McpSessions {
    map: Mutex<HashMap<String, Arc<McpSession>>>,
}

impl McpSessions {
    fn get(&self, id: &str) -> Option<Arc<McpSession>> {
        self.map.lock().ok()?.get(id).cloned()
    }

    fn insert(&self, id: String, session: McpSession) {
        if let Ok(mut map) = self.map.lock() {
            map.insert(id, Arc::new(session));
        }
    }

    fn remove(&self, id: &str) -> bool {
        self.map.lock().is_ok_and(|mut m| m.remove(id).is_some())
    }

    /// Drops the sessions idle for `timeout` or longer that no call is using (a call in
    /// flight holds the session's lock); their slots come back.
    fn reap(&self, timeout: Duration) {
        let now = Instant::now();
        let Ok(mut map) = self.map.lock() else { return };
        map.retain(|id, s| {
            let idle = s.idle_for(now) >= timeout && s.session.try_lock().is_ok();
            if idle {
                tracing::info!("MCP session {id} idle for {timeout:?}: closed");
            }
            !idle
        });
    }
}

/// Closes idle MCP sessions every so often while the server lives (WebSocket sessions time
/// themselves out; these have no connection to do it).
pub fn spawn_reaper(app: &Arc<App>) {
    let Some(timeout) = app.config.idle_timeout else {
        return;
    };
    let app: Weak<App> = Arc::downgrade(app);
    let period = (timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(5));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(period).await;
            let Some(app) = app.upgrade() else { return };
            app.mcp.reap(timeout);
        }
    });
}

/// The tools' descriptions and input schemas, as `tools/list` gives them.
fn tools() -> Value {
    json!([
        {
            "name": "reset",
            "description": "Start an episode. Returns the first observation; structuredContent \
                            holds the full OpenEnv observation payload (observation.text, \
                            observation.valid_actions, metadata).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "seed": {"type": "integer", "minimum": 0,
                             "description": "the task's seed; absent: the server draws one"},
                    "episode_id": {"type": "string", "maxLength": crate::wire::MAX_EPISODE_ID}
                },
                "additionalProperties": {
                    "description": "an env setting for this episode (as `quester env serve \
                                    --set` takes it)"
                }
            }
        },
        {
            "name": "step",
            "description": "Play one turn: `action` is the model's whole response, from which \
                            the env parses its move (normally the last <action>...</action>). \
                            Returns the next observation; structuredContent holds reward, done \
                            and metadata.",
            "inputSchema": {
                "type": "object",
                "properties": {"action": {"type": "string"}},
                "required": ["action"],
                "additionalProperties": false
            }
        },
        {
            "name": "state",
            "description": "The episode's state: episode_id, step_count, env, max_turns, and \
                            once an episode started seed, done, won, total_reward.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}
        }
    ])
}

/// A tool call read from its arguments, before any env is touched.
enum ToolCall {
    Reset(crate::wire::ResetParams),
    Step(String),
    State,
}

fn parse_tool(name: &str, mut args: Map<String, Value>) -> Result<ToolCall, RpcError> {
    let rpc = |e: RequestError| RpcError::from_request(&e);
    match name {
        "reset" => parse_reset(args).map(ToolCall::Reset).map_err(rpc),
        "step" => {
            let action = take_string(&mut args, "action", &["arguments"]).map_err(rpc)?;
            no_other_fields(&args, &["arguments"]).map_err(rpc)?;
            Ok(ToolCall::Step(action))
        }
        "state" => no_other_fields(&args, &["arguments"])
            .map(|()| ToolCall::State)
            .map_err(rpc),
        other => Err(RpcError::new(
            INVALID_PARAMS,
            format!("Tool not found: {other}"),
        )),
    }
}

/// Runs a parsed call on a session; the result is MCP's `CallToolResult`: the observation
/// text (the state's JSON for `state`) as text content, the whole payload as
/// `structuredContent`, and again as `data`, where OpenEnv's `MCPToolClient.call_tool` reads
/// a result.
fn run_tool(session: &mut Session, call: ToolCall) -> Result<Value, RequestError> {
    let payload = match call {
        ToolCall::Reset(params) => session.reset(params)?,
        ToolCall::Step(action) => session.step(&action)?,
        ToolCall::State => session.state(),
    };
    let text = match payload.pointer("/observation/text").and_then(Value::as_str) {
        Some(t) => t.to_string(),
        None => payload.to_string(),
    };
    Ok(json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": payload,
        "data": payload,
        "isError": false,
    }))
}

/// The `params` member: an object, or absent (then empty).
fn params_of(request: &Map<String, Value>) -> Result<Map<String, Value>, RpcError> {
    match request.get("params") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(RpcError::new(INVALID_PARAMS, "Params must be an object")),
    }
}

/// `params.session_id`, when given: a string naming a live session.
fn named_session(
    app: &App,
    params: &Map<String, Value>,
) -> Result<Option<(String, Arc<McpSession>)>, RpcError> {
    match params.get("session_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) => match app.mcp.get(id) {
            Some(s) => Ok(Some((id.clone(), s))),
            None => Err(RpcError::new(
                INVALID_PARAMS,
                format!("Unknown session_id: {id}"),
            )),
        },
        Some(_) => Err(RpcError::new(INVALID_PARAMS, "session_id must be a string")),
    }
}

async fn create_session(app: &App) -> Result<Value, RpcError> {
    let Some(slot) = app.slots.try_acquire() else {
        let (active, max) = (app.slots.active(), app.slots.max());
        return Err(RpcError::new(
            SERVER_ERROR,
            format!("Server at capacity ({active}/{max} sessions)"),
        )
        .with_data(json!({"active_sessions": active, "max_sessions": max})));
    };
    let template = app.config.env.clone();
    let built = tokio::task::spawn_blocking(move || Session::new(template)).await;
    let session = match built {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(RpcError::new(
                SERVER_ERROR,
                format!("cannot build the env: {e}"),
            ))
        }
        Err(_) => return Err(RpcError::new(SERVER_ERROR, "building the env panicked")),
    };
    let id = quester_envs::episode::new_episode_id();
    app.mcp.insert(
        id.clone(),
        McpSession {
            session: Mutex::new(session),
            last_used: Mutex::new(Instant::now()),
            _slot: slot,
        },
    );
    Ok(json!({"session_id": id}))
}

fn close_session(app: &App, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let id = match params.get("session_id") {
        Some(Value::String(id)) if !id.is_empty() => id,
        _ => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "Invalid params - 'session_id' is required",
            ))
        }
    };
    if app.mcp.remove(id) {
        Ok(json!({"session_id": id, "closed": true}))
    } else {
        Err(RpcError::new(
            INVALID_PARAMS,
            format!("Unknown session_id: {id}"),
        ))
    }
}

async fn call_tool(app: &App, params: Map<String, Value>) -> Result<Value, RpcError> {
    let name = match params.get("name") {
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        _ => return Err(RpcError::new(INVALID_PARAMS, "Missing 'name' in params")),
    };
    let args = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "'arguments' must be an object",
            ))
        }
    };
    let named = named_session(app, &params)?;
    let call = parse_tool(&name, args)?;
    let joined = match named {
        Some((id, entry)) => {
            entry.touch();
            let held = Arc::clone(&entry);
            let joined = tokio::task::spawn_blocking(move || {
                let mut session = held.session.lock().map_err(|_| {
                    RequestError::execution("the session failed in an earlier call")
                })?;
                run_tool(&mut session, call)
            })
            .await;
            entry.touch();
            if joined.is_err() {
                // The env panicked midway: its state is unknown, so the session ends.
                app.mcp.remove(&id);
            }
            joined
        }
        None => on_fresh_session(app.config.env.clone(), move |s| run_tool(s, call)).await,
    };
    match joined {
        Ok(result) => result.map_err(|e| RpcError::from_request(&e)),
        Err(e) => {
            tracing::error!("an env call panicked: {e}");
            Err(RpcError::new(INTERNAL_ERROR, "the environment panicked"))
        }
    }
}

/// The reply to one request body; `None` for a notification, which gets none.
async fn answer(app: &App, body: &[u8]) -> Option<Value> {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Some(reply(
            Value::Null,
            Err(RpcError::new(PARSE_ERROR, "Parse error")),
        ));
    };
    let Value::Object(request) = request else {
        return Some(reply(
            Value::Null,
            Err(RpcError::new(INVALID_REQUEST, "Invalid Request")),
        ));
    };
    let id = match request.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let method = request.get("method").and_then(Value::as_str);
    let (Some(method), Some("2.0")) = (method, request.get("jsonrpc").and_then(Value::as_str))
    else {
        return Some(reply(
            id,
            Err(RpcError::new(INVALID_REQUEST, "Invalid Request")),
        ));
    };
    // MCP's notifications (`notifications/initialized`, ...) carry no id and want no reply.
    if method.starts_with("notifications/") && !request.contains_key("id") {
        return None;
    }
    let params = match params_of(&request) {
        Ok(p) => p,
        Err(e) => return Some(reply(id, Err(e))),
    };
    let result = match method {
        "initialize" => Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "quester-envserve", "version": env!("CARGO_PKG_VERSION")},
        })),
        "ping" => Ok(json!({})),
        "tools/list" => named_session(app, &params).map(|s| {
            if let Some((_, s)) = s {
                s.touch();
            }
            json!({"tools": tools()})
        }),
        "tools/call" => call_tool(app, params).await,
        "openenv/session/create" => create_session(app).await,
        "openenv/session/close" => close_session(app, &params),
        _ => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    };
    Some(reply(id, result))
}

pub async fn endpoint(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match answer(&app, &body).await {
        Some(value) => Json(value).into_response(),
        None => StatusCode::ACCEPTED.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_arguments_are_checked_before_any_env_runs() {
        let args = |v: Value| v.as_object().cloned().unwrap();
        let missing = parse_tool("step", Map::new()).err().unwrap();
        assert_eq!(missing.code, INVALID_PARAMS);
        assert_eq!(missing.data.unwrap()["errors"][0]["type"], "missing");
        let wrong = parse_tool("step", args(json!({"action": 3})))
            .err()
            .unwrap();
        assert_eq!(wrong.data.unwrap()["errors"][0]["type"], "string_type");
        let extra = parse_tool("state", args(json!({"x": 1}))).err().unwrap();
        assert_eq!(extra.code, INVALID_PARAMS);
        let seed = parse_tool("reset", args(json!({"seed": -1})))
            .err()
            .unwrap();
        assert_eq!(seed.code, INVALID_PARAMS);
        let unknown = parse_tool("jump", Map::new()).err().unwrap();
        assert_eq!(
            (unknown.code, unknown.message.as_str()),
            (INVALID_PARAMS, "Tool not found: jump")
        );
        assert!(matches!(
            parse_tool("step", args(json!({"action": "<action>up</action>"}))),
            Ok(ToolCall::Step(a)) if a == "<action>up</action>"
        ));
    }

    #[test]
    fn every_tool_has_an_object_schema() {
        let tools = tools();
        let names: Vec<_> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                assert_eq!(t["inputSchema"]["type"], "object");
                t["name"].as_str().unwrap()
            })
            .collect();
        assert_eq!(names, ["reset", "step", "state"]);
    }
}
