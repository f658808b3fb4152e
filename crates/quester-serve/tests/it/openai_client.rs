//! The OpenAI-compatible client against scripted loopback servers: timeouts, retries, errors,
//! bounded concurrency and the request it sends.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use quester_serve::openai::protocol::WireMessage;
use quester_serve::openai::{ChatParams, OpenAiClient, OpenAiConfig, OpenAiError};

/// What the scripted server answers to request number `i` (0-based), given its body.
type Script = dyn Fn(usize, &str) -> Reply + Send + Sync;

enum Reply {
    /// Status and body.
    Answer(u16, String),
    /// Hold the connection open without answering for this long, then close it.
    Stall(Duration),
}

/// A loopback HTTP/1.1 server answering each request per `script`; stops when dropped.
struct ScriptedServer {
    url: String,
    requests: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<String>>>,
    max_in_flight: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

fn read_request(stream: &mut TcpStream) -> Option<String> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return Some(String::from_utf8_lossy(&data[end + 4..end + 4 + length]).to_string());
            }
        }
    }
}

impl ScriptedServer {
    fn start(script: Box<Script>) -> Self {
        Self::start_with_delay(script, Duration::ZERO)
    }

    /// Every answer is delayed by `delay` (to observe concurrency).
    fn start_with_delay(script: Box<Script>, delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let script: Arc<Script> = Arc::from(script);
        let (r, b, f, m, s) = (
            requests.clone(),
            bodies.clone(),
            in_flight.clone(),
            max_in_flight.clone(),
            stop.clone(),
        );
        let thread = std::thread::spawn(move || {
            let mut workers = Vec::new();
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        let (r, b, f, m, s, script) = (
                            r.clone(),
                            b.clone(),
                            f.clone(),
                            m.clone(),
                            s.clone(),
                            script.clone(),
                        );
                        workers.push(std::thread::spawn(move || {
                            let Some(body) = read_request(&mut stream) else { return };
                            let i = r.fetch_add(1, Ordering::SeqCst);
                            b.lock().unwrap().push(body.clone());
                            let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                            m.fetch_max(now, Ordering::SeqCst);
                            std::thread::sleep(delay);
                            match script(i, &body) {
                                Reply::Answer(status, text) => {
                                    let head = format!(
                                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                        text.len()
                                    );
                                    let _ = stream.write_all(head.as_bytes());
                                    let _ = stream.write_all(text.as_bytes());
                                }
                                Reply::Stall(d) => {
                                    let until = Instant::now() + d;
                                    while Instant::now() < until && !s.load(Ordering::SeqCst) {
                                        std::thread::sleep(Duration::from_millis(10));
                                    }
                                }
                            }
                            f.fetch_sub(1, Ordering::SeqCst);
                        }));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            for w in workers {
                let _ = w.join();
            }
        });
        Self {
            url,
            requests,
            bodies,
            max_in_flight,
            stop,
            thread: Some(thread),
        }
    }

    fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn ok_body(text: &str) -> String {
    serde_json::json!({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    })
    .to_string()
}

fn client(url: &str, f: impl FnOnce(&mut OpenAiConfig)) -> OpenAiClient {
    let mut c = OpenAiConfig {
        base_url: url.to_string(),
        model: "test-model".into(),
        timeout_s: 2.0,
        max_retries: 3,
        backoff_initial_ms: 10,
        backoff_max_ms: 40,
        ..OpenAiConfig::default()
    };
    f(&mut c);
    OpenAiClient::new(c).unwrap()
}

fn hello() -> Vec<WireMessage> {
    vec![WireMessage::new("user", "hello")]
}

#[test]
fn stalled_server_times_out_after_the_retries() {
    let server = ScriptedServer::start(Box::new(|_, _| Reply::Stall(Duration::from_secs(5))));
    let c = client(&server.url, |c| {
        c.timeout_s = 0.3;
        c.max_retries = 1;
    });
    let start = Instant::now();
    let err = c.chat(&hello(), &ChatParams::default()).unwrap_err();
    let elapsed = start.elapsed();
    match &err {
        OpenAiError::Timeout {
            attempts,
            timeout_s,
            ..
        } => {
            assert_eq!(*attempts, 2);
            assert_eq!(*timeout_s, 0.3);
        }
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(err.to_string().contains("timed out"), "{err}");
    // Two attempts of 0.3 s plus a 10 ms backoff; far below the server's 5 s stall.
    assert!(elapsed >= Duration::from_millis(600), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert_eq!(server.count(), 2);
}

#[test]
fn server_errors_are_retried_until_success() {
    let server = ScriptedServer::start(Box::new(|i, _| {
        if i < 2 {
            Reply::Answer(500, r#"{"error": {"message": "overloaded"}}"#.into())
        } else {
            Reply::Answer(200, ok_body("fine now"))
        }
    }));
    let c = client(&server.url, |_| {});
    let reply = c.chat(&hello(), &ChatParams::default()).unwrap();
    assert_eq!(reply.text, "fine now");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert_eq!(reply.usage.unwrap().total_tokens, 5);
    assert_eq!(server.count(), 3);
}

#[test]
fn too_many_requests_is_retried_and_gives_up_with_the_status() {
    let server = ScriptedServer::start(Box::new(|_, _| {
        Reply::Answer(429, r#"{"error": {"message": "slow down"}}"#.into())
    }));
    let c = client(&server.url, |c| c.max_retries = 2);
    let err = c.chat(&hello(), &ChatParams::default()).unwrap_err();
    match &err {
        OpenAiError::Status {
            status,
            message,
            attempts,
            ..
        } => {
            assert_eq!(*status, 429);
            assert_eq!(message, "slow down");
            assert_eq!(*attempts, 3);
        }
        other => panic!("expected a status error, got {other}"),
    }
    assert_eq!(server.count(), 3);
}

#[test]
fn client_errors_are_not_retried() {
    let server = ScriptedServer::start(Box::new(|_, _| {
        Reply::Answer(
            400,
            r#"{"error": {"message": "`top_p` must be in (0, 1]"}}"#.into(),
        )
    }));
    let c = client(&server.url, |_| {});
    let err = c.chat(&hello(), &ChatParams::default()).unwrap_err();
    assert!(
        matches!(
            err,
            OpenAiError::Status {
                status: 400,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("top_p"), "{err}");
    assert_eq!(server.count(), 1);
}

#[test]
fn malformed_json_is_a_clear_error_and_not_retried() {
    let server = ScriptedServer::start(Box::new(|_, _| {
        Reply::Answer(200, "{\"choices\": [".into())
    }));
    let c = client(&server.url, |_| {});
    let err = c.chat(&hello(), &ChatParams::default()).unwrap_err();
    match &err {
        OpenAiError::Malformed { what, excerpt, .. } => {
            assert!(what.contains("not JSON"), "{what}");
            assert_eq!(excerpt, "{\"choices\": [");
        }
        other => panic!("expected malformed, got {other}"),
    }
    assert_eq!(server.count(), 1);
}

#[test]
fn missing_fields_are_named_by_their_json_path() {
    let cases = [
        (r#"{"id": "x"}"#, "missing field `choices`"),
        (r#"{"choices": {}}"#, "`choices` is not an array"),
        (r#"{"choices": []}"#, "`choices` is empty"),
        (
            r#"{"choices": [{"index": 0}]}"#,
            "missing field `choices[0].message`",
        ),
        (
            r#"{"choices": [{"message": {"role": "assistant"}}]}"#,
            "missing field `choices[0].message.content`",
        ),
        (
            r#"{"choices": [{"message": {"content": 7}}]}"#,
            "`choices[0].message.content` is not a string",
        ),
        (
            r#"{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": "a"}]}}]}"#,
            "`choices[0].logprobs.content[0].logprob` is missing or not a number",
        ),
        (
            r#"{"error": {"message": "boom"}}"#,
            "server returned an error object",
        ),
        ("[1, 2]", "body is not a JSON object"),
    ];
    for (body, expected) in cases {
        let err = quester_serve::openai::parse_chat_reply("http://x/v1/chat/completions", body)
            .unwrap_err();
        assert!(err.to_string().contains(expected), "{body}: {err}");
    }
}

#[test]
fn logprobs_are_read_when_the_server_gives_them() {
    let body = r#"{"choices": [{"message": {"role": "assistant", "content": "ab"}, "finish_reason": "length",
        "logprobs": {"content": [{"token": "a", "logprob": -0.5, "top_logprobs": []}, {"token": "b", "logprob": -1.25}]}}]}"#;
    let reply = quester_serve::openai::parse_chat_reply("u", body).unwrap();
    let lp = reply.logprobs.unwrap();
    assert_eq!(lp.len(), 2);
    assert_eq!((lp[0].token.as_str(), lp[0].logprob), ("a", -0.5));
    assert_eq!((lp[1].token.as_str(), lp[1].logprob), ("b", -1.25));
    assert_eq!(reply.finish_reason.as_deref(), Some("length"));
    assert!(reply.usage.is_none());
}

#[test]
fn refused_connections_are_retried_then_reported() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = client(&format!("http://127.0.0.1:{port}/v1"), |c| {
        c.max_retries = 2;
    });
    let err = c.chat(&hello(), &ChatParams::default()).unwrap_err();
    assert!(
        matches!(err, OpenAiError::Transport { attempts: 3, .. }),
        "{err}"
    );
}

#[test]
fn the_request_carries_model_messages_and_sampling_params() {
    let server = ScriptedServer::start(Box::new(|_, _| Reply::Answer(200, ok_body("ok"))));
    let c = client(&server.url, |c| c.request_logprobs = true);
    let params = ChatParams {
        temperature: 0.7,
        top_p: Some(0.9),
        top_k: Some(20),
        max_tokens: 33,
        stop: vec!["</answer>".into()],
        seed: Some(1234),
    };
    let messages = vec![
        WireMessage::new("system", "be brief"),
        WireMessage::new("user", "2+3?"),
    ];
    c.chat(&messages, &params).unwrap();
    let body: serde_json::Value = serde_json::from_str(&server.bodies.lock().unwrap()[0]).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["content"], "2+3?");
    assert_eq!(body["temperature"], 0.7);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["top_k"], 20);
    assert_eq!(body["max_tokens"], 33);
    assert_eq!(body["stop"][0], "</answer>");
    assert_eq!(body["seed"], 1234);
    assert_eq!(body["logprobs"], true);
    assert!(body.get("stream").is_none());
}

#[test]
fn chat_many_bounds_concurrency_and_keeps_order() {
    // Each answer echoes the user's message, so order can be checked.
    let server = ScriptedServer::start_with_delay(
        Box::new(|_, body| {
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            Reply::Answer(200, ok_body(v["messages"][0]["content"].as_str().unwrap()))
        }),
        Duration::from_millis(80),
    );
    let c = client(&server.url, |c| c.max_concurrency = 3);
    let requests: Vec<_> = (0..9)
        .map(|i| {
            (
                vec![WireMessage::new("user", format!("q{i}"))],
                ChatParams::default(),
            )
        })
        .collect();
    let start = Instant::now();
    let replies = c.chat_many(&requests);
    let elapsed = start.elapsed();
    let texts: Vec<String> = replies.into_iter().map(|r| r.unwrap().text).collect();
    assert_eq!(texts, (0..9).map(|i| format!("q{i}")).collect::<Vec<_>>());
    let peak = server.max_in_flight.load(Ordering::SeqCst);
    assert!(peak <= 3, "peak in flight {peak}");
    assert!(peak >= 2, "requests never overlapped (peak {peak})");
    // 9 requests of 80 ms, 3 at a time: at least 3 rounds.
    assert!(elapsed >= Duration::from_millis(240), "{elapsed:?}");
}

#[test]
fn bad_config_names_the_key() {
    let bad = |f: fn(&mut OpenAiConfig)| {
        let mut c = OpenAiConfig::default();
        f(&mut c);
        OpenAiClient::new(c).unwrap_err().to_string()
    };
    assert!(bad(|c| c.base_url = "localhost:8080".into()).contains("base_url"));
    assert!(bad(|c| c.timeout_s = 0.0).contains("timeout_s"));
    assert!(bad(|c| c.max_concurrency = 0).contains("max_concurrency"));
    assert!(
        bad(|c| c.api_key_env = Some("QUESTER_SURELY_UNSET_VARIABLE".into()))
            .contains("api_key_env")
    );
    let table: toml::Table = toml::from_str("timeout_s = 5.0\nbogus = 1").unwrap();
    let err = quester_config::from_table::<OpenAiConfig>(table)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bogus"), "{err}");
}

#[test]
fn backoff_doubles_and_is_capped() {
    let c = OpenAiConfig {
        backoff_initial_ms: 100,
        backoff_max_ms: 1000,
        ..OpenAiConfig::default()
    };
    let waits: Vec<u64> = (0..6).map(|r| c.backoff_ms(r)).collect();
    assert_eq!(waits, vec![100, 200, 400, 800, 1000, 1000]);
    assert_eq!(c.backoff_ms(200), 1000);
}
