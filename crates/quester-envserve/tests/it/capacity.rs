//! At --max-sessions a new session is refused at once; leaving clients free their slots, also
//! mid-step.

use crate::common::*;
use quester_envserve::ServerConfig;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

fn config(max: usize) -> ServerConfig {
    let mut c = ServerConfig::new("sokoban", toml::Table::new());
    c.max_sessions = max;
    c
}

/// A session that is not refused, waiting for a slot to come back (the server frees it when
/// it notices the client left).
async fn connect_when_free(addr: SocketAddr) -> Ws {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut ws = connect(addr).await;
        let r = reset(&mut ws, 0).await;
        if r["type"] == "observation" {
            return ws;
        }
        assert_eq!(error_code(&r), "CAPACITY_REACHED");
        assert!(Instant::now() < deadline, "slot never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_over_the_limit_gets_capacity_reached() {
    let addr = start(config(2)).await;
    let mut a = connect(addr).await;
    let mut b = connect(addr).await;
    assert_eq!(reset(&mut a, 1).await["type"], "observation");
    assert_eq!(reset(&mut b, 2).await["type"], "observation");
    let mut c = connect(addr).await;
    // The refusal arrives unasked, as OpenEnv's server sends it.
    let r = recv(&mut c).await;
    assert_eq!(error_code(&r), "CAPACITY_REACHED");
    assert_eq!(r["data"]["max_sessions"], 2);
    assert_eq!(r["data"]["active_sessions"], 2);
    drop(a);
    let mut d = connect_when_free(addr).await;
    play_and_compare(&mut d, "sokoban", 8).await;
    play_and_compare(&mut b, "sokoban", 9).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_vanishing_mid_step_frees_its_env() {
    let addr = start(config(1)).await;
    let mut ws = connect(addr).await;
    reset(&mut ws, 3).await;
    send_text(
        &mut ws,
        r#"{"type":"step","data":{"message":"<action>up</action>"}}"#.into(),
    )
    .await;
    drop(ws);
    let mut next = connect_when_free(addr).await;
    play_and_compare(&mut next, "sokoban", 3).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_is_closed_and_frees_its_slot() {
    let mut cfg = config(1);
    cfg.idle_timeout = Some(Duration::from_millis(300));
    let addr = start(cfg).await;
    let mut ws = connect(addr).await;
    assert_eq!(reset(&mut ws, 1).await["type"], "observation");
    // Silence past the timeout: the server says why and closes.
    let r = recv(&mut ws).await;
    assert_eq!(error_code(&r), "SESSION_ERROR");
    let mut next = connect_when_free(addr).await;
    play_and_compare(&mut next, "sokoban", 1).await;
}
