//! Every bad input gets its error reply, the session goes on, and a clean episode still plays.

use crate::common::*;
use futures_util::SinkExt;
use quester_envserve::ServerConfig;
use tokio_tungstenite::tungstenite::Message;

fn config() -> ServerConfig {
    ServerConfig::new("tictactoe", toml::Table::new())
}

#[tokio::test(flavor = "multi_thread")]
async fn each_bad_message_gets_its_code_and_the_session_survives() {
    let addr = start(config()).await;
    let mut ws = connect(addr).await;
    let cases: Vec<(String, &str)> = vec![
        ("{not json".into(), "INVALID_JSON"),
        (r#"{"type":"dance"}"#.into(), "UNKNOWN_TYPE"),
        (r#"{"type":"mcp","data":{}}"#.into(), "UNKNOWN_TYPE"),
        (r#"{"data":{}}"#.into(), "UNKNOWN_TYPE"),
        ("[1,2,3]".into(), "VALIDATION_ERROR"),
        (
            r#"{"type":"step","data":{"message":42}}"#.into(),
            "VALIDATION_ERROR",
        ),
        (
            r#"{"type":"step","data":{"message":null}}"#.into(),
            "VALIDATION_ERROR",
        ),
        (
            r#"{"type":"step","data":"<action>1</action>"}"#.into(),
            "VALIDATION_ERROR",
        ),
        (r#"{"type":"step"}"#.into(), "VALIDATION_ERROR"),
        (
            r#"{"type":"reset","data":{"seed":"seven"}}"#.into(),
            "VALIDATION_ERROR",
        ),
        // Step before any reset.
        (
            r#"{"type":"step","data":{"message":"<action>1</action>"}}"#.into(),
            "EXECUTION_ERROR",
        ),
    ];
    for (msg, code) in &cases {
        send_text(&mut ws, msg.clone()).await;
        let r = recv(&mut ws).await;
        assert_eq!(error_code(&r), *code, "{msg}: {r}");
        assert!(r["data"]["message"].is_string(), "{r}");
    }
    // A 10 MB action: refused by size, and the connection stays usable.
    let huge = "x".repeat(10 << 20);
    let r = step(&mut ws, &huge).await;
    assert_eq!(error_code(&r), "VALIDATION_ERROR");
    assert!(
        r["data"]["message"].as_str().unwrap().contains("limit"),
        "{r}"
    );
    // A binary frame.
    ws.send(Message::binary(b"{}".to_vec())).await.unwrap();
    assert_eq!(error_code(&recv(&mut ws).await), "VALIDATION_ERROR");
    play_and_compare(&mut ws, "tictactoe", 2).await;
    // Step after the episode ended.
    let r = step(&mut ws, "<action>1</action>").await;
    assert_eq!(error_code(&r), "EXECUTION_ERROR");
    // And a fresh episode still plays on the same connection.
    play_and_compare(&mut ws, "tictactoe", 4).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_beyond_the_transport_limit_ends_only_its_own_session() {
    let mut cfg = config();
    cfg.max_message_bytes = 1024;
    let addr = start(cfg).await;
    let mut other = connect(addr).await;
    reset(&mut other, 1).await;
    let mut ws = connect(addr).await;
    // 16x the limit is read and refused politely; far beyond it the connection is dropped.
    let _ = ws
        .send(Message::text(format!(
            r#"{{"type":"step","data":{{"message":"{}"}}}}"#,
            "x".repeat(1 << 20)
        )))
        .await;
    // The server ends that connection (saying why if the client still reads).
    loop {
        let next = tokio::time::timeout(REPLY_TIMEOUT, futures_util::StreamExt::next(&mut ws))
            .await
            .expect("closed in time");
        match next {
            Some(Ok(Message::Text(t))) => {
                let r: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                assert_eq!(error_code(&r), "SESSION_ERROR");
            }
            Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            Some(Ok(other)) => panic!("unexpected {other:?}"),
        }
    }
    // The server and the other session carry on.
    play_and_compare(&mut other, "tictactoe", 6).await;
    let mut fresh = connect(addr).await;
    play_and_compare(&mut fresh, "tictactoe", 7).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn close_ends_the_session_cleanly() {
    let addr = start(config()).await;
    let mut ws = connect(addr).await;
    reset(&mut ws, 1).await;
    send_text(&mut ws, r#"{"type":"close"}"#.into()).await;
    // The server closes its side: the stream ends without another reply.
    let next = tokio::time::timeout(REPLY_TIMEOUT, futures_util::StreamExt::next(&mut ws))
        .await
        .expect("closed in time");
    assert!(
        matches!(next, None | Some(Ok(Message::Close(_)) | Err(_))),
        "{next:?}"
    );
}
