//! A server on an ephemeral loopback port, a WebSocket client, a raw HTTP/1.1 client, and the
//! reference play of an env called directly.

use futures_util::{SinkExt, StreamExt};
use quester_envserve::{Server, ServerConfig};
use rand::SeedableRng;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Long enough for a debug-built env step, short enough that a hang fails the test.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

pub async fn start(config: ServerConfig) -> SocketAddr {
    let server = Server::bind(config, "127.0.0.1:0").await.expect("bind");
    let addr = server.local_addr().expect("local addr");
    tokio::spawn(server.run(std::future::pending()));
    addr
}

pub async fn connect(addr: SocketAddr) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .expect("connect");
    ws
}

pub async fn send_text(ws: &mut Ws, text: String) {
    ws.send(Message::text(text)).await.expect("send");
}

/// The next reply; panics on timeout or a closed connection.
pub async fn recv(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(REPLY_TIMEOUT, ws.next())
            .await
            .expect("reply in time")
            .expect("connection open")
            .expect("frame");
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).expect("JSON reply");
        }
    }
}

pub async fn request(ws: &mut Ws, msg: Value) -> Value {
    send_text(ws, msg.to_string()).await;
    recv(ws).await
}

pub async fn reset(ws: &mut Ws, seed: u64) -> Value {
    request(ws, json!({"type": "reset", "data": {"seed": seed}})).await
}

pub async fn step(ws: &mut Ws, response: &str) -> Value {
    request(ws, json!({"type": "step", "data": {"message": response}})).await
}

/// The `code` of an error reply (panics on any other reply).
pub fn error_code(reply: &Value) -> &str {
    assert_eq!(reply["type"], "error", "{reply}");
    reply["data"]["code"].as_str().expect("code")
}

/// One step as the env reported it when called directly.
#[derive(Debug)]
pub struct RefStep {
    pub response: String,
    pub observation: String,
    pub reward: f64,
    pub done: bool,
    pub won: bool,
    pub valid: bool,
}

/// Plays `env` directly from `seed`: one unparseable response first (an invalid step), then the
/// env's expert until the episode ends. Returns the first observation and the steps.
pub fn reference_play(env: &str, seed: u64) -> (String, Vec<RefStep>) {
    let mut e = quester_envs::make_env(env, toml::Table::new()).expect("env");
    let answer = quester_envs::spec(env).expect("spec").answer;
    let first = e.reset(seed).expect("reset");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut response = "I will think about it first.".to_string();
    while steps.len() < 200 {
        let s = e.step(&response);
        let done = s.done;
        steps.push(RefStep {
            response: response.clone(),
            observation: s.observation,
            reward: s.reward,
            done,
            won: s.won,
            valid: s.valid,
        });
        if done {
            break;
        }
        let action = e
            .expert_action(&mut rng)
            .expect("an expert")
            .expect("expert move");
        response = answer.write(&action);
    }
    (first, steps)
}

/// Plays the reference responses over `ws` and checks every reply against the direct play.
pub async fn play_and_compare(ws: &mut Ws, env: &str, seed: u64) {
    let (first, steps) = reference_play(env, seed);
    assert!(
        steps.last().is_some_and(|s| s.done),
        "reference episode ended"
    );
    assert!(!steps[0].valid, "the first response is an invalid step");
    assert!(steps.len() > 2, "{steps:?}");
    let r = reset(ws, seed).await;
    assert_eq!(r["type"], "observation", "{r}");
    assert_eq!(r["data"]["observation"]["text"], first.as_str());
    assert_eq!(r["data"]["done"], false);
    assert!(r["data"]["reward"].is_null());
    assert_eq!(r["data"]["metadata"]["seed"], seed);
    for (i, s) in steps.iter().enumerate() {
        let r = step(ws, &s.response).await;
        assert_eq!(r["type"], "observation", "step {i}: {r}");
        let d = &r["data"];
        assert_eq!(d["observation"]["text"], s.observation.as_str(), "step {i}");
        assert_eq!(d["reward"].as_f64(), Some(s.reward), "step {i}");
        assert_eq!(d["done"], s.done, "step {i}");
        assert_eq!(d["metadata"]["won"], s.won, "step {i}");
        assert_eq!(d["metadata"]["valid"], s.valid, "step {i}");
        assert_eq!(d["metadata"]["step_count"], i + 1, "step {i}");
        assert_eq!(d["observation"]["metadata"], d["metadata"], "step {i}");
    }
    let state = request(ws, json!({"type": "state"})).await;
    assert_eq!(state["type"], "state", "{state}");
    assert_eq!(state["data"]["step_count"], steps.len());
    assert_eq!(state["data"]["done"], true);
}

/// One HTTP/1.1 request on a fresh connection: (status, body as JSON or a string).
pub async fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    // An oversize body may be refused before it is read whole; the reply still comes.
    let _ = stream.write_all(body.as_bytes()).await;
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(REPLY_TIMEOUT, stream.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    (status, value)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
