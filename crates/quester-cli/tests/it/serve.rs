//! `quester serve` end to end: the binary serves the default model on loopback and the
//! library's OpenAI client talks to it.

use quester_serve::openai::protocol::WireMessage;
use quester_serve::openai::{ChatParams, OpenAiClient, OpenAiConfig};
use std::io::{BufRead, BufReader};
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
        .args(["serve", "--addr", "127.0.0.1:0", "--model-id", "smol"])
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
        base_url: base,
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
    drop(server);
}
