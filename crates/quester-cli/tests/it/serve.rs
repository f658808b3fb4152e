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

/// `quester serve` of the default model on a free loopback port, and its `/v1` base URL.
fn start_server(model_id: &str) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quester"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--model-id",
            model_id,
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
    let mut lines = BufReader::new(stderr).lines();
    for line in lines.by_ref() {
        let line = line.expect("read stderr");
        if let Some(rest) = line.split(" at ").nth(1) {
            if line.starts_with("serving") {
                base = rest.split("/chat/").next().map(str::to_string);
                break;
            }
        }
    }
    // Keep reading the server's log so that it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (server, base.expect("the server announces its address"))
}

#[test]
fn serves_the_default_model_over_the_openai_api() {
    let (server, base) = start_server("smol");
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

/// `quester experiment` with its runs' rollouts on a server: a one-step LaMer plan trains with
/// every generation on `quester serve`, loads its adapters there, logs the sampler / trainer
/// gap, and is evaluated (on the native engine) like any plan.
#[test]
fn a_plan_trains_with_its_rollouts_on_a_server() {
    let (server, base) = start_server("smol");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "on-a-server"
seeds = [0]
set = ["rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.engine=\"openai\"",
       "rollout.servers=[\"{base}\"]", "rollout.temperature=1.0", "rollout.top_p=1.0",
       "rollout.top_k=0"]
[budget]
steps = 1
[eval]
tasks = 2
[[run]]
name = "lamer"
preset = "{}"
"#,
            root.join("configs/lamer_bandit_cpu.toml").display()
        ),
    )
    .unwrap();
    let dir = tmp.path().join("exp");
    let out = Command::new(env!("CARGO_BIN_EXE_quester"))
        .arg("experiment")
        .arg(&plan)
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let train = dir.join("lamer/seed-0/train");
    let metrics = std::fs::read_to_string(train.join("metrics.jsonl")).unwrap();
    let row: serde_json::Value = serde_json::from_str(metrics.lines().next().unwrap()).unwrap();
    let gap = row["sampler_logp_gap"].as_f64().expect("a gap logged");
    assert!(gap < 1e-4, "{gap}");
    assert!(row["time_weight_sync_s"].as_f64().unwrap() > 0.0, "{row}");
    assert!(train.join("adapters/policy-v1").is_dir());
    assert!(dir.join("lamer/seed-0/eval/eval.json").is_file());
    assert!(dir.join("results.md").is_file());
    drop(server);
}
