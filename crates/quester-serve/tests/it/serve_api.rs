//! `serve` over loopback with a scripted backend: routes, validation, batching, failures,
//! and the OpenAI client talking to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quester_serve::openai::protocol::{FinishReason, TokenLogprob, WireMessage};
use quester_serve::openai::{ChatParams, OpenAiClient, OpenAiConfig, OpenAiError};
use quester_serve::server::{
    serve_backend, BackendError, BackendOrders, BackendStep, ChatBackend, ChatCodec,
    GenerationOutput, GenerationRequest, ServeConfig,
};

/// Answers `echo:<last message>:t<temperature>:s<seed>`, cut to `max_tokens` characters and at
/// the first stop string; "panic" panics (failing what runs), "fail" and "bad" fail their
/// sequence (500 and 400). Records the size of each step.
struct EchoBackend {
    batches: Arc<Mutex<Vec<usize>>>,
    delay: Duration,
}

impl EchoBackend {
    fn echo(r: &GenerationRequest) -> Result<GenerationOutput, BackendError> {
        let last = &r.messages.last().unwrap().content;
        match last.as_str() {
            "panic" => panic!("the backend blew up"),
            "fail" => return Err(BackendError::internal("out of memory")),
            "bad" => return Err(BackendError::invalid("the template rejects this")),
            _ => {}
        }
        let full = format!("echo:{last}:t{}:s{}", r.temperature, r.seed);
        let mut text: String = full.chars().take(r.max_tokens).collect();
        let mut finish = if text.len() < full.len() {
            FinishReason::Length
        } else {
            FinishReason::Stop
        };
        if let Some(pos) = r.stop.iter().filter_map(|s| text.find(s.as_str())).min() {
            text.truncate(pos);
            finish = FinishReason::Stop;
        }
        let logprobs = if r.logprobs {
            text.chars()
                .map(|c| TokenLogprob {
                    token: c.to_string(),
                    logprob: -0.25,
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(GenerationOutput {
            completion_tokens: text.chars().count(),
            token_ids: text.chars().map(u32::from).collect(),
            text,
            finish_reason: finish,
            prompt_tokens: r.messages.iter().map(|m| m.content.len()).sum(),
            logprobs,
        })
    }
}

impl ChatBackend for EchoBackend {
    fn model_id(&self) -> String {
        "echo-model".into()
    }

    /// Answers what is pending as one step; sequences submitted meanwhile form the next.
    fn generate_continuous(
        &mut self,
        first: Vec<(u64, GenerationRequest)>,
        on_step: &mut dyn FnMut(BackendStep) -> BackendOrders,
    ) -> Result<(), BackendError> {
        let mut pending = first;
        while !pending.is_empty() {
            self.batches.lock().unwrap().push(pending.len());
            std::thread::sleep(self.delay);
            let finished = pending
                .iter()
                .map(|(key, r)| (*key, Self::echo(r)))
                .collect();
            pending = on_step(BackendStep {
                finished,
                progress: Vec::new(),
            })
            .submit;
        }
        Ok(())
    }

    fn codec(&self) -> Option<Arc<dyn ChatCodec>> {
        Some(Arc::new(EchoCodec))
    }
}

/// Renders any conversation but one whose last message is "unrenderable"; decodes ids as
/// characters (never asked to: the echo backend reports no tokens before a sequence ends).
struct EchoCodec;

impl ChatCodec for EchoCodec {
    fn prompt_tokens(&self, messages: &[WireMessage]) -> Result<usize, BackendError> {
        match messages.last() {
            Some(m) if m.content == "unrenderable" => {
                Err(BackendError::invalid("the template cannot render this"))
            }
            _ => Ok(messages.iter().map(|m| m.content.len()).sum()),
        }
    }

    fn check_prompt_ids(&self, ids: &[u32]) -> Result<(), BackendError> {
        if ids.is_empty() {
            return Err(BackendError::invalid("empty"));
        }
        Ok(())
    }

    fn decode(&self, ids: &[u32]) -> Result<String, BackendError> {
        Ok(ids.iter().filter_map(|&i| char::from_u32(i)).collect())
    }
}

fn start(
    config: ServeConfig,
    delay: Duration,
) -> (quester_serve::server::ServerHandle, Arc<Mutex<Vec<usize>>>) {
    let batches = Arc::new(Mutex::new(Vec::new()));
    let backend = EchoBackend {
        batches: batches.clone(),
        delay,
    };
    let handle = serve_backend(Box::new(backend), "127.0.0.1:0", config).unwrap();
    (handle, batches)
}

fn client_for(base_url: &str) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig {
        base_url: base_url.to_string(),
        model: "echo-model".into(),
        timeout_s: 10.0,
        max_retries: 0,
        ..OpenAiConfig::default()
    })
    .unwrap()
}

/// POSTs raw JSON and returns (status, parsed body).
fn post(base_url: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut resp = agent
        .post(format!("{base_url}{path}"))
        .header("Content-Type", "application/json")
        .send(body)
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

#[test]
fn models_and_chat_round_trip_through_the_client() {
    let (server, _) = start(ServeConfig::default(), Duration::ZERO);
    assert_eq!(server.addr().ip().to_string(), "127.0.0.1");
    assert_ne!(server.addr().port(), 0);
    let client = client_for(&server.base_url());
    assert_eq!(
        client.list_models().unwrap(),
        vec!["echo-model".to_string()]
    );
    let params = ChatParams {
        temperature: 0.5,
        seed: Some(42),
        max_tokens: 100,
        ..ChatParams::default()
    };
    let reply = client
        .chat(&[WireMessage::new("user", "hi")], &params)
        .unwrap();
    assert_eq!(reply.text, "echo:hi:t0.5:s42");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    let usage = reply.usage.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.total_tokens
        ),
        (2, 16, 18)
    );
    // Stop strings and max_tokens reach the backend.
    let params = ChatParams {
        stop: vec![":t".into()],
        seed: Some(1),
        ..ChatParams::default()
    };
    assert_eq!(
        client
            .chat(&[WireMessage::new("user", "hi")], &params)
            .unwrap()
            .text,
        "echo:hi"
    );
    let params = ChatParams {
        max_tokens: 4,
        seed: Some(1),
        ..ChatParams::default()
    };
    let cut = client
        .chat(&[WireMessage::new("user", "hi")], &params)
        .unwrap();
    assert_eq!(
        (cut.text.as_str(), cut.finish_reason.as_deref()),
        ("echo", Some("length"))
    );
    server.shutdown();
}

#[test]
fn n_choices_get_consecutive_seeds_and_logprobs_on_request() {
    let (server, batches) = start(ServeConfig::default(), Duration::ZERO);
    let body = r#"{"messages": [{"role": "user", "content": "x"}], "n": 3, "seed": 10, "temperature": 0, "logprobs": true}"#;
    let (status, v) = post(&server.base_url(), "/chat/completions", body);
    assert_eq!(status, 200, "{v}");
    let texts: Vec<&str> = v["choices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        vec!["echo:x:t0:s10", "echo:x:t0:s11", "echo:x:t0:s12"]
    );
    assert_eq!(v["choices"][2]["index"], 2);
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        v["choices"][0]["logprobs"]["content"]
            .as_array()
            .unwrap()
            .len(),
        13
    );
    assert_eq!(v["choices"][0]["logprobs"]["content"][0]["logprob"], -0.25);
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "echo-model");
    assert_eq!(v["usage"]["completion_tokens"], 39);
    // The three choices were generated as one batch.
    assert_eq!(*batches.lock().unwrap(), vec![3]);
}

#[test]
fn requests_without_seed_get_distinct_reproducible_seeds() {
    let seeds = |config: ServeConfig| {
        let (server, _) = start(config, Duration::ZERO);
        let client = client_for(&server.base_url());
        (0..3)
            .map(|_| {
                client
                    .chat(&[WireMessage::new("user", "q")], &ChatParams::default())
                    .unwrap()
                    .text
            })
            .collect::<Vec<_>>()
    };
    let a = seeds(ServeConfig {
        seed: 7,
        ..ServeConfig::default()
    });
    let b = seeds(ServeConfig {
        seed: 7,
        ..ServeConfig::default()
    });
    assert_eq!(a, b);
    assert_ne!(a[0], a[1]);
    assert_ne!(a[1], a[2]);
}

#[test]
fn invalid_requests_get_400_naming_the_field() {
    let (server, batches) = start(ServeConfig::default(), Duration::ZERO);
    let url = server.base_url();
    let cases = [
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}"#,
            "temperature",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "temperature": -1}"#,
            "temperature",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "top_p": 0}"#,
            "top_p",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}"#,
            "max_tokens",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "max_tokens": 100000}"#,
            "max_tokens",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "n": 17}"#,
            "n",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "stop": [1]}"#,
            "stop",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "seed": "s"}"#,
            "seed",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "stream": 1}"#,
            "stream",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "x"}], "stream": true, "stream_options": []}"#,
            "stream_options",
        ),
        (r#"{"messages": []}"#, "messages"),
        (
            r#"{"messages": [{"role": "robot", "content": "x"}]}"#,
            "messages",
        ),
        (r#"{"messages": [{"role": "user"}]}"#, "messages"),
        (r#"{"model": "m"}"#, "messages"),
    ];
    for (body, param) in cases {
        let (status, v) = post(&url, "/chat/completions", body);
        assert_eq!(status, 400, "{body}: {v}");
        assert_eq!(v["error"]["param"], param, "{body}: {v}");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(param),
            "{v}"
        );
    }
    let (status, v) = post(&url, "/chat/completions", "{not json");
    assert_eq!(status, 400);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("not JSON"),
        "{v}"
    );
    let (status, _) = post(&url, "/nowhere", "{}");
    assert_eq!(status, 404);
    let (status, _) = post(&url, "/models", "{}");
    assert_eq!(status, 405);
    // Nothing invalid ever reached the model.
    assert!(batches.lock().unwrap().is_empty());
}

#[test]
fn requests_arriving_during_a_step_join_the_next_together() {
    let config = ServeConfig {
        max_batch: 8,
        ..ServeConfig::default()
    };
    let (server, batches) = start(config, Duration::from_millis(20));
    let client = client_for(&server.base_url());
    let requests: Vec<_> = (0..8)
        .map(|i| {
            (
                vec![WireMessage::new("user", format!("m{i}"))],
                ChatParams {
                    seed: Some(i),
                    ..ChatParams::default()
                },
            )
        })
        .collect();
    let client = OpenAiClient::new(OpenAiConfig {
        max_concurrency: 8,
        ..client.config().clone()
    })
    .unwrap();
    let replies = client.chat_many(&requests);
    for (i, r) in replies.into_iter().enumerate() {
        assert_eq!(r.unwrap().text, format!("echo:m{i}:t1:s{i}"));
    }
    let sizes = batches.lock().unwrap().clone();
    assert_eq!(sizes.iter().sum::<usize>(), 8, "{sizes:?}");
    assert!(sizes.iter().all(|&s| s <= 8), "{sizes:?}");
    assert!(
        sizes.iter().any(|&s| s > 1),
        "no request joined together with another: {sizes:?}"
    );
}

#[test]
fn backend_failures_become_500_and_the_server_keeps_serving() {
    let (server, _) = start(ServeConfig::default(), Duration::ZERO);
    let client = client_for(&server.base_url());
    for (what, code, expected) in [
        ("fail", 500, "out of memory"),
        ("bad", 400, "rejects"),
        ("panic", 500, "the backend blew up"),
    ] {
        let err = client
            .chat(&[WireMessage::new("user", what)], &ChatParams::default())
            .unwrap_err();
        match &err {
            OpenAiError::Status {
                status, message, ..
            } => {
                assert_eq!(*status, code, "{what}");
                assert!(message.contains(expected), "{message}");
            }
            other => panic!("expected an HTTP error, got {other}"),
        }
    }
    let ok = client.chat(
        &[WireMessage::new("user", "still there?")],
        &ChatParams {
            seed: Some(3),
            ..ChatParams::default()
        },
    );
    assert_eq!(ok.unwrap().text, "echo:still there?:t1:s3");
}

#[test]
fn shutdown_releases_the_port() {
    let (server, _) = start(ServeConfig::default(), Duration::ZERO);
    let addr = server.addr();
    server.shutdown();
    let client = client_for(&format!("http://{addr}/v1"));
    assert!(client.list_models().is_err());
    // Dropping a handle stops it too.
    let (server, _) = start(ServeConfig::default(), Duration::ZERO);
    drop(server);
}

#[test]
fn a_bad_request_does_not_fail_its_batch_mates() {
    let config = ServeConfig {
        max_batch: 4,
        ..ServeConfig::default()
    };
    let (server, batches) = start(config, Duration::ZERO);
    let client = OpenAiClient::new(OpenAiConfig {
        max_concurrency: 4,
        ..client_for(&server.base_url()).config().clone()
    })
    .unwrap();
    let contents = ["a", "bad", "b", "c"];
    let requests: Vec<_> = contents
        .iter()
        .map(|c| {
            (
                vec![WireMessage::new("user", *c)],
                ChatParams {
                    seed: Some(0),
                    ..ChatParams::default()
                },
            )
        })
        .collect();
    let replies = client.chat_many(&requests);
    for (c, r) in contents.iter().zip(replies) {
        match (*c, r) {
            ("bad", Err(OpenAiError::Status { status: 400, .. })) => {}
            ("bad", other) => panic!("bad request answered {other:?}"),
            (c, r) => assert_eq!(r.unwrap().text, format!("echo:{c}:t1:s0")),
        }
    }
    assert_eq!(batches.lock().unwrap().iter().sum::<usize>(), 4);
}

#[test]
fn the_openai_policy_generates_through_serve() {
    use quester_serve::openai::OpenAiPolicy;
    use quester_train::policy::{ChatMessage, GenRequest, Policy, SamplingParams};
    let (server, batches) = start(ServeConfig::default(), Duration::ZERO);
    let mut policy = OpenAiPolicy::new(OpenAiConfig {
        base_url: server.base_url(),
        request_logprobs: true,
        max_retries: 0,
        max_concurrency: 3,
        ..OpenAiConfig::default()
    })
    .unwrap();
    let params = SamplingParams {
        temperature: 0.5,
        max_new_tokens: 64,
        ..SamplingParams::default()
    };
    let requests: Vec<GenRequest> = (0..3)
        .map(|i| GenRequest {
            messages: vec![
                ChatMessage::system("sys"),
                ChatMessage::user(format!("u{i}")),
            ],
            response_prefix: String::new(),
            prompt_ids: None,
            params: SamplingParams {
                seed: 5 + i,
                ..params.clone()
            },
        })
        .collect();
    let gens = policy.generate(&requests).unwrap();
    for (i, g) in gens.iter().enumerate() {
        let expected = format!("echo:u{i}:t0.5:s{}", 5 + i);
        assert_eq!(g.text, expected);
        assert_eq!(g.logprobs.len(), expected.chars().count());
        assert!(g.logprobs.iter().all(|&l| l == -0.25));
        assert_eq!(g.temperatures, vec![0.5; g.logprobs.len()]);
        assert!(g.prompt_ids.is_empty() && g.response_ids.is_empty());
    }
    assert_eq!(batches.lock().unwrap().iter().sum::<usize>(), 3);
    // A request that fails after the retries fails the call, naming which one.
    let mut bad = requests.clone();
    bad[1].messages[1].content = "fail".into();
    let err = policy.generate(&bad).unwrap_err().to_string();
    assert!(
        err.contains("request 1") && err.contains("out of memory"),
        "{err}"
    );
}

#[test]
fn a_conversation_the_codec_rejects_is_a_400_before_queueing() {
    let (server, batches) = start(ServeConfig::default(), Duration::ZERO);
    let body = r#"{"messages": [{"role": "user", "content": "unrenderable"}]}"#;
    let (status, v) = post(&server.base_url(), "/chat/completions", body);
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["param"], "messages");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot render"),
        "{v}"
    );
    assert!(batches.lock().unwrap().is_empty());
    assert_eq!(server.stats().queued, 0);
}

#[test]
fn a_backend_without_token_steps_streams_each_choice_when_it_ends() {
    let (server, _) = start(ServeConfig::default(), Duration::ZERO);
    let body = r#"{"messages": [{"role": "user", "content": "s"}], "n": 2, "seed": 4,
        "stream": true, "logprobs": true}"#;
    let mut conn = TcpStream::connect(server.addr()).unwrap();
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).unwrap();
    // Header names are case-insensitive (hyper writes them in lower case).
    let head = raw.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200 ok\r\n"), "{raw}");
    assert!(
        head.contains("content-type: text/event-stream\r\n"),
        "{raw}"
    );
    assert!(head.contains("transfer-encoding: chunked\r\n"), "{raw}");
    let events: Vec<&str> = raw
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"), "{raw}");
    let chunks: Vec<serde_json::Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    for i in 0..2u64 {
        let mine: Vec<&serde_json::Value> = chunks
            .iter()
            .map(|c| &c["choices"][0])
            .filter(|c| c["index"] == i)
            .collect();
        assert_eq!(mine[0]["delta"]["role"], "assistant");
        let text: String = mine
            .iter()
            .filter_map(|c| c["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, format!("echo:s:t1:s{}", 4 + i));
        let logprobs = mine
            .iter()
            .filter_map(|c| c["logprobs"]["content"].as_array())
            .map(Vec::len)
            .sum::<usize>();
        assert_eq!(logprobs, text.chars().count());
        assert_eq!(mine.last().unwrap()["finish_reason"], "stop");
    }
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
}

/// Writes `request` on a fresh connection and reads until the server closes it.
fn raw_exchange(server: &quester_serve::server::ServerHandle, request: &str) -> String {
    let mut conn = TcpStream::connect(server.addr()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).unwrap();
    raw
}

#[test]
fn connections_keep_alive_and_bad_framing_is_answered() {
    let (server, _) = start(
        ServeConfig {
            max_body_bytes: 200,
            ..ServeConfig::default()
        },
        Duration::ZERO,
    );
    // Two requests on one connection, the second closing it.
    let raw = raw_exchange(
        &server,
        "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(raw.matches("HTTP/1.1 200 OK").count(), 2, "{raw}");
    assert!(
        raw.contains("echo-model") && raw.contains("\"status\":\"ok\""),
        "{raw}"
    );
    // HTTP/1.0 is answered in kind, and the connection closes after the answer (the read
    // above ends).
    let raw = raw_exchange(&server, "GET /v1/models HTTP/1.0\r\n\r\n");
    assert!(
        raw.starts_with("HTTP/1.0 200 OK") && raw.contains("echo-model"),
        "{raw}"
    );
    // A body past the limit is a 413 in OpenAI's shape.
    let big = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nConnection: close\r\nContent-Length: 201\r\n\r\n{}",
        "x".repeat(201)
    );
    let raw = raw_exchange(&server, &big);
    assert!(
        raw.starts_with("HTTP/1.1 413") && raw.contains("exceeds 200 bytes"),
        "{raw}"
    );
    // A chunked body is read like any other.
    let body = r#"{"messages": [{"role": "user", "content": "k"}], "seed": 2}"#;
    let chunked = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let raw = raw_exchange(&server, &chunked);
    assert!(
        raw.starts_with("HTTP/1.1 200 OK") && raw.contains("echo:k:t1:s2"),
        "{raw}"
    );
    // A garbled request line is a 400, and the connection closes.
    let raw = raw_exchange(&server, "NONSENSE\r\n\r\n");
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    // Expect: 100-continue gets its interim answer, then the real one.
    let body = r#"{"messages": [{"role": "user", "content": "c"}], "seed": 1}"#;
    let mut conn = TcpStream::connect(server.addr()).unwrap();
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "HTTP/1.1 100 Continue\r\n");
    conn.write_all(body.as_bytes()).unwrap();
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    assert!(
        rest.contains("HTTP/1.1 200 OK") && rest.contains("echo:c:t1:s1"),
        "{rest}"
    );
}
