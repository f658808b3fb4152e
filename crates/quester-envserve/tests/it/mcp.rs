//! `POST /mcp`: the env as MCP tools, in OpenEnv's HTTP MCP sessions, checked against the env
//! played directly; and every bad request answered with a JSON-RPC error.

use crate::common::*;
use quester_envserve::ServerConfig;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
const SERVER_ERROR: i64 = -32000;

async fn rpc(addr: SocketAddr, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let (status, reply) = http(addr, "POST", "/mcp", Some(&body.to_string())).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        (&reply["jsonrpc"], &reply["id"]),
        (&json!("2.0"), &json!(7)),
        "{reply}"
    );
    reply
}

async fn call(addr: SocketAddr, session: &str, tool: &str, arguments: Value) -> Value {
    let params = json!({"name": tool, "arguments": arguments, "session_id": session});
    rpc(addr, "tools/call", params).await
}

async fn create(addr: SocketAddr) -> String {
    let r = rpc(addr, "openenv/session/create", json!({})).await;
    r["result"]["session_id"]
        .as_str()
        .expect("session_id")
        .to_string()
}

fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_episode_through_tools_matches_direct_play() {
    let addr = start(ServerConfig::new("sokoban", toml::Table::new())).await;
    let init = rpc(addr, "initialize", json!({})).await;
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"],
        false
    );
    let list = rpc(addr, "tools/list", json!({})).await;
    let names: Vec<_> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["reset", "step", "state"]);
    assert_eq!(
        list["result"]["tools"][1]["inputSchema"]["required"],
        json!(["action"])
    );

    let (first, steps) = reference_play("sokoban", 5);
    let id = create(addr).await;
    let r = call(addr, &id, "reset", json!({"seed": 5})).await;
    assert_eq!(r["result"]["content"][0]["type"], "text", "{r}");
    assert_eq!(r["result"]["content"][0]["text"], first.as_str());
    assert_eq!(r["result"]["isError"], false);
    assert_eq!(r["result"]["structuredContent"]["metadata"]["seed"], 5);
    for (i, s) in steps.iter().enumerate() {
        let r = call(addr, &id, "step", json!({"action": s.response})).await;
        let payload = &r["result"]["structuredContent"];
        assert_eq!(
            r["result"]["content"][0]["text"],
            s.observation.as_str(),
            "step {i}"
        );
        assert_eq!(payload["reward"].as_f64(), Some(s.reward), "step {i}");
        assert_eq!(payload["done"], s.done, "step {i}");
        assert_eq!(payload["metadata"]["valid"], s.valid, "step {i}");
        assert_eq!(r["result"]["data"], *payload, "step {i}");
    }
    let st = call(addr, &id, "state", json!({})).await;
    assert_eq!(st["result"]["structuredContent"]["step_count"], steps.len());
    assert_eq!(st["result"]["structuredContent"]["done"], true);
    // Past the end, as over /ws: an error, and the session goes on.
    let over = call(addr, &id, "step", json!({"action": "<action>up</action>"})).await;
    assert_eq!(code(&over), INTERNAL_ERROR);
    assert_eq!(over["error"]["data"]["code"], "EXECUTION_ERROR");
    let closed = rpc(addr, "openenv/session/close", json!({"session_id": id})).await;
    assert_eq!(closed["result"]["closed"], true);
    let gone = call(addr, &id, "state", json!({})).await;
    assert_eq!(code(&gone), INVALID_PARAMS);
    assert!(gone["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Unknown session_id"));
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_requests_get_json_rpc_errors() {
    let addr = start(ServerConfig::new("tictactoe", toml::Table::new())).await;
    let id = create(addr).await;
    let before = call(addr, &id, "step", json!({"action": "<action>1</action>"})).await;
    assert_eq!(code(&before), INTERNAL_ERROR);
    assert!(before["error"]["message"]
        .as_str()
        .unwrap()
        .contains("step before reset"));
    let cases = [
        (json!({"name": "jump", "session_id": id}), INVALID_PARAMS),
        (json!({"arguments": {}, "session_id": id}), INVALID_PARAMS),
        (
            json!({"name": "step", "arguments": {}, "session_id": id}),
            INVALID_PARAMS,
        ),
        (
            json!({"name": "step", "arguments": {"action": 1}, "session_id": id}),
            INVALID_PARAMS,
        ),
        (
            json!({"name": "step", "arguments": "up", "session_id": id}),
            INVALID_PARAMS,
        ),
        (
            json!({"name": "reset", "arguments": {"seed": "x"}, "session_id": id}),
            INVALID_PARAMS,
        ),
        (
            json!({"name": "reset", "arguments": {"no_such": 1}, "session_id": id}),
            INVALID_PARAMS,
        ),
        (json!({"name": "state", "session_id": 5}), INVALID_PARAMS),
        (
            json!({"name": "state", "session_id": "nope"}),
            INVALID_PARAMS,
        ),
    ];
    for (params, want) in cases {
        let r = rpc(addr, "tools/call", params.clone()).await;
        assert_eq!(code(&r), want, "{params}: {r}");
    }
    assert_eq!(
        code(&rpc(addr, "tools/call", json!([1])).await),
        INVALID_PARAMS
    );
    assert_eq!(
        code(&rpc(addr, "resources/list", json!({})).await),
        METHOD_NOT_FOUND
    );
    assert_eq!(
        code(&rpc(addr, "openenv/session/close", json!({})).await),
        INVALID_PARAMS
    );
    // Not JSON-RPC at all (`openenv validate` posts `{}`).
    for body in ["{}", "[]", r#"{"jsonrpc":"1.0","method":"ping","id":1}"#] {
        let (s, r) = http(addr, "POST", "/mcp", Some(body)).await;
        assert_eq!((s, code(&r)), (200, INVALID_REQUEST), "{body}");
    }
    let (s, r) = http(addr, "POST", "/mcp", Some("nope")).await;
    assert_eq!((s, code(&r)), (200, -32700));
    // A notification gets no reply body.
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(http(addr, "POST", "/mcp", Some(note)).await.0, 202);
    // The session survived all of it.
    let r = call(addr, &id, "reset", json!({"seed": 1})).await;
    assert_eq!(r["result"]["structuredContent"]["done"], false, "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_without_a_session_plays_a_fresh_env() {
    let addr = start(ServerConfig::new("sokoban", toml::Table::new())).await;
    let (first, _) = reference_play("sokoban", 3);
    let params = json!({"name": "reset", "arguments": {"seed": 3}});
    let r = rpc(addr, "tools/call", params).await;
    assert_eq!(r["result"]["content"][0]["text"], first.as_str());
    let params = json!({"name": "step", "arguments": {"action": "<action>up</action>"}});
    assert_eq!(code(&rpc(addr, "tools/call", params).await), INTERNAL_ERROR);
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_sessions_share_max_sessions_and_time_out() {
    let mut cfg = ServerConfig::new("sokoban", toml::Table::new());
    cfg.max_sessions = 1;
    cfg.idle_timeout = Some(Duration::from_millis(300));
    let addr = start(cfg).await;
    let id = create(addr).await;
    // The one slot is taken: a second MCP session and a WebSocket session are refused.
    let refused = rpc(addr, "openenv/session/create", json!({})).await;
    assert_eq!(code(&refused), SERVER_ERROR);
    assert_eq!(refused["error"]["data"]["max_sessions"], 1);
    let mut ws = connect(addr).await;
    assert_eq!(error_code(&recv(&mut ws).await), "CAPACITY_REACHED");
    // Idle past the timeout, the session is closed and its slot comes back.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = call(addr, &id, "state", json!({})).await;
        if r.get("error").is_some() {
            assert_eq!(code(&r), INVALID_PARAMS, "{r}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the idle session was never closed"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let mut ws = connect(addr).await;
    play_and_compare(&mut ws, "sokoban", 2).await;
}
