//! `quester serve` end to end: the binary serves the default model on loopback and the
//! library's OpenAI client talks to it; a streamed answer adds up to the plain one.

use quester_serve::openai::protocol::WireMessage;
use quester_serve::openai::{ChatParams, OpenAiClient, OpenAiConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

/// Kills the server when the test ends, pass or fail.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serves_the_default_model_over_the_openai_api() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quester"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--model-id",
            "smol",
            "--max-queue",
            "4",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start quester serve");
    let stderr = child.stderr.take().expect("stderr");
    let server = Server(child);
    // The announced line carries the bound port: "serving `smol` at http://127.0.0.1:N/v1/...".
    let mut base = None;
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("read stderr");
        if let Some(rest) = line.split(" at ").nth(1) {
            if line.starts_with("serving") {
                base = rest.split("/chat/").next().map(str::to_string);
                break;
            }
        }
    }
    let base = base.expect("the server announces its address");
    let client = OpenAiClient::new(OpenAiConfig {
        base_url: base.clone(),
        model: "smol".into(),
        timeout_s: 300.0,
        max_retries: 0,
        ..OpenAiConfig::default()
    })
    .unwrap();
    assert_eq!(client.list_models().unwrap(), vec!["smol".to_string()]);
    let reply = client
        .chat(
            &[WireMessage::new("user", "What is 2+3?")],
            &ChatParams {
                temperature: 0.0,
                max_tokens: 16,
                ..ChatParams::default()
            },
        )
        .unwrap();
    assert!(reply.text.contains('5'), "{}", reply.text);

    // Streamed (over HTTP/1.0: the events end with the connection), the deltas of a greedy
    // answer with non-ASCII text add up to the plain answer.
    let question = "Repeat exactly: café, naïve, 東京 ☕";
    let plain = client
        .chat(
            &[WireMessage::new("user", question)],
            &ChatParams {
                temperature: 0.0,
                max_tokens: 16,
                ..ChatParams::default()
            },
        )
        .unwrap();
    let body = serde_json::json!({"messages": [{"role": "user", "content": question}],
        "temperature": 0, "max_tokens": 16, "stream": true})
    .to_string();
    let addr = base.trim_start_matches("http://").trim_end_matches("/v1");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).unwrap();
    assert!(raw.contains("text/event-stream"), "{raw}");
    let events: Vec<&str> = raw
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"), "{raw}");
    let deltas: Vec<String> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str::<serde_json::Value>(e).unwrap())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(deltas.concat(), plain.text, "{deltas:?}");
    assert!(
        deltas.iter().filter(|d| !d.is_empty()).count() > 1,
        "{deltas:?}"
    );
    drop(server);
}
