//! The HTTP endpoints, as OpenEnv's simulation-mode server and `openenv validate` use them.

use crate::common::*;
use quester_envserve::{Mode, ServerConfig};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn info_endpoints_answer_as_openenv_validate_expects() {
    let addr = start(ServerConfig::new("sokoban", toml::Table::new())).await;
    let (s, health) = http(addr, "GET", "/health", None).await;
    assert_eq!((s, health["status"].as_str()), (200, Some("healthy")));
    let (s, meta) = http(addr, "GET", "/metadata", None).await;
    assert_eq!(s, 200);
    assert_eq!(meta["name"], "sokoban");
    assert!(meta["description"].is_string());
    let (s, schema) = http(addr, "GET", "/schema", None).await;
    assert_eq!(s, 200);
    for k in ["action", "observation", "state"] {
        assert!(schema[k].is_object(), "{k}: {schema}");
    }
    let (s, api) = http(addr, "GET", "/openapi.json", None).await;
    assert_eq!(s, 200);
    assert!(api["info"]["version"].as_str().unwrap().starts_with("1."));
    for p in ["/reset", "/step", "/state"] {
        assert!(api["paths"][p].is_object(), "{p}");
    }
    let (s, mcp) = http(addr, "POST", "/mcp", Some("{}")).await;
    assert_eq!((s, mcp["jsonrpc"].as_str()), (200, Some("2.0")));
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_reset_and_step_match_direct_play() {
    let addr = start(ServerConfig::new("sokoban", toml::Table::new())).await;
    let (first, steps) = reference_play("sokoban", 4);
    let (s, r) = http(addr, "POST", "/reset", Some(r#"{"seed":4}"#)).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["observation"]["text"], first.as_str());
    // An empty body is an empty request.
    assert_eq!(http(addr, "POST", "/reset", None).await.0, 200);
    let body = json!({"action": {"message": steps[0].response}, "seed": 4}).to_string();
    let (s, r) = http(addr, "POST", "/step", Some(&body)).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["observation"]["text"], steps[0].observation.as_str());
    assert_eq!(r["reward"].as_f64(), Some(steps[0].reward));
    let (s, st) = http(addr, "GET", "/state", None).await;
    assert_eq!((s, st["step_count"].as_u64()), (200, Some(0)));
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_http_requests_get_4xx_and_the_server_goes_on() {
    let mut cfg = ServerConfig::new("sokoban", toml::Table::new());
    cfg.max_message_bytes = 4096;
    let addr = start(cfg).await;
    assert_eq!(http(addr, "POST", "/step", Some("{oops")).await.0, 422);
    assert_eq!(http(addr, "POST", "/step", Some("{}")).await.0, 422);
    let r = http(addr, "POST", "/step", Some(r#"{"action":{"message":3}}"#)).await;
    assert_eq!(r.0, 422);
    assert_eq!(
        r.1["detail"][0]["loc"],
        json!(["body", "action", "message"])
    );
    assert_eq!(
        http(addr, "POST", "/reset", Some(r#"{"seed":-3}"#)).await.0,
        422
    );
    let big = json!({"action": {"message": "x".repeat(10_000)}}).to_string();
    assert_eq!(http(addr, "POST", "/step", Some(&big)).await.0, 413);
    assert_eq!(http(addr, "GET", "/health", None).await.0, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn production_mode_has_no_simulation_endpoints() {
    let mut cfg = ServerConfig::new("sokoban", toml::Table::new());
    cfg.mode = Mode::Production;
    let addr = start(cfg).await;
    assert_eq!(http(addr, "POST", "/reset", Some("{}")).await.0, 404);
    let (_, api) = http(addr, "GET", "/openapi.json", None).await;
    assert!(api["paths"]["/reset"].is_null());
    let mut ws = connect(addr).await;
    play_and_compare(&mut ws, "sokoban", 5).await;
}
