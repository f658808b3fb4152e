//! `POST /mcp`: a JSON-RPC 2.0 endpoint with no tools yet. It answers `tools/list` with an
//! empty list and every other method with "method not found", so MCP clients and
//! `openenv validate` get well-formed replies.

use axum::body::Bytes;
use axum::Json;
use serde_json::{json, Value};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;

fn error(code: i64, message: &str, id: Value) -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": id})
}

pub fn answer(body: &[u8]) -> Value {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error(PARSE_ERROR, "Parse error", Value::Null);
    };
    let id = match request.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let method = request.get("method").and_then(Value::as_str);
    let (Some(method), Some("2.0")) = (method, request.get("jsonrpc").and_then(Value::as_str))
    else {
        return error(INVALID_REQUEST, "Invalid Request", id);
    };
    match method {
        "tools/list" => json!({"jsonrpc": "2.0", "result": {"tools": []}, "id": id}),
        _ => error(METHOD_NOT_FOUND, &format!("Method not found: {method}"), id),
    }
}

pub async fn endpoint(body: Bytes) -> Json<Value> {
    Json(answer(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_json_rpc() {
        assert_eq!(answer(b"{}")["error"]["code"], INVALID_REQUEST);
        assert_eq!(answer(b"nope")["error"]["code"], PARSE_ERROR);
        let list = answer(br#"{"jsonrpc":"2.0","method":"tools/list","id":1}"#);
        assert_eq!(list["result"]["tools"], json!([]));
        assert_eq!(list["id"], 1);
        let call = answer(br#"{"jsonrpc":"2.0","method":"tools/call","id":"a"}"#);
        assert_eq!(call["error"]["code"], METHOD_NOT_FOUND);
    }
}
