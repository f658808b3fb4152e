//! `serve` over the native model (quester-model's tiny random Llama): requests join the running
//! batch at a token step, streamed deltas add up to the whole answer, `n` choices are the
//! single requests of their seeds, a full queue answers 429, and a client that leaves (streamed
//! or not) has its sequence dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use quester_serve::server::{serve_policy, ServeConfig, ServerHandle};
use quester_train::policy::Policy;
use serde_json::{json, Value};

/// The tiny random Llama's config, with `overrides`.
fn tiny_config(overrides: &[String]) -> quester_train::TrainConfig {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../quester-model/tests/fixtures/tiny-llama");
    let mut all = vec![format!("model.path={}", path.display())];
    all.extend(overrides.iter().cloned());
    let mut table = toml::Table::new();
    quester_train::config::migrate::apply_overrides(&mut table, &all).unwrap();
    quester_train::TrainConfig::from_table(table).unwrap()
}

pub(crate) fn tiny_server(config: ServeConfig) -> ServerHandle {
    let cfg = tiny_config(&[]);
    serve_policy(
        move || {
            quester_train::api::build_policy(&cfg)
                .map(|p| p as Box<dyn Policy>)
                .map_err(|e| e.to_string())
        },
        "tiny",
        "127.0.0.1:0",
        config,
    )
    .unwrap()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// POSTs JSON to `path` under the server's `/v1`; (status, body text).
fn post_json(server: &ServerHandle, path: &str, body: &Value) -> (u16, String) {
    let mut resp = agent()
        .post(format!("{}/{path}", server.base_url()))
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().unwrap())
}

/// The body of `GET /v1/models`.
fn models(server: &ServerHandle) -> String {
    agent()
        .get(format!("{}/models", server.base_url()))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap()
}

/// POSTs a chat request; (status, parsed body).
fn chat(server: &ServerHandle, body: &Value) -> (u16, Value) {
    let (status, text) = post_json(server, "chat/completions", body);
    (status, serde_json::from_str(&text).unwrap())
}

/// POSTs a streamed chat request; the JSON of every `data:` event up to `[DONE]` (which must
/// come).
fn chat_stream(server: &ServerHandle, body: &Value) -> Vec<Value> {
    let mut resp = agent()
        .post(format!("{}/chat/completions", server.base_url()))
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let kind = resp
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap();
    assert_eq!(kind, "text/event-stream");
    let mut events = Vec::new();
    for line in BufReader::new(resp.body_mut().as_reader()).lines() {
        let line = line.unwrap();
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            return events;
        }
        events.push(serde_json::from_str(data).unwrap());
    }
    panic!("the stream ended without [DONE]: {events:?}");
}

fn text(v: &Value, choice: usize) -> String {
    v["choices"][choice]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn user(content: &str) -> Value {
    json!([{"role": "user", "content": content}])
}

/// A request that runs the whole `max_tokens` (the greedy tiny model never picks its EOS
/// here: checked by the tests that rely on it).
fn long_request(max_tokens: usize) -> Value {
    json!({"messages": user("tell me a long story"), "temperature": 0, "max_tokens": max_tokens})
}

#[test]
fn a_request_sent_during_a_long_one_joins_its_batch_and_finishes_first() {
    let server = tiny_server(ServeConfig::default());
    let (status, alone) = chat(&server, &long_request(400));
    assert_eq!(status, 200, "{alone}");
    assert_eq!(alone["choices"][0]["finish_reason"], "length", "{alone}");
    assert_eq!(alone["usage"]["completion_tokens"], 400);

    std::thread::scope(|s| {
        let long = s.spawn(|| {
            let v = chat(&server, &long_request(400)).1;
            (v, Instant::now())
        });
        // Once the long request decodes, a short one is sent.
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.stats().running == 0 {
            assert!(Instant::now() < deadline, "the long request never started");
            std::thread::sleep(Duration::from_millis(1));
        }
        let short = json!({"messages": user("hi"), "temperature": 0, "max_tokens": 3});
        let (status, v) = chat(&server, &short);
        let short_done = Instant::now();
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["usage"]["completion_tokens"], 3, "{v}");
        let (long_v, long_done) = long.join().unwrap();
        assert!(
            short_done < long_done,
            "the short request waited for the long one to end"
        );
        // Sharing the batch changed nothing in the long answer.
        assert_eq!(text(&long_v, 0), text(&alone, 0));
    });
    assert_eq!(server.stats().finished, 3);
}

#[test]
fn streamed_deltas_add_up_to_the_answer_of_the_same_seed() {
    let server = tiny_server(ServeConfig::default());
    let base = json!({"messages": user("stream this"), "temperature": 4.0, "seed": 11,
        "max_tokens": 60, "logprobs": true});
    let (status, whole) = chat(&server, &base);
    assert_eq!(status, 200, "{whole}");
    let full = text(&whole, 0);
    // A stop string from the middle of the answer: two different characters (so the first
    // alone, at the end of the text, is held back while it could begin the stop), neither a
    // replacement character for a cut multi-byte one.
    let chars: Vec<char> = full.chars().collect();
    let at = (chars.len() / 4..chars.len().saturating_sub(1))
        .find(|&i| chars[i] != chars[i + 1] && chars[i] != '\u{FFFD}' && chars[i + 1] != '\u{FFFD}')
        .expect("a stop string to cut at");
    let stop: String = chars[at..at + 2].iter().collect();
    for stop in [None, Some(stop)] {
        let mut body = base.clone();
        if let Some(s) = &stop {
            body["stop"] = json!([s]);
        }
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let events = chat_stream(&server, &body);
        let expected = if stop.is_some() {
            let mut b = base.clone();
            b["stop"] = body["stop"].clone();
            chat(&server, &b).1
        } else {
            whole.clone()
        };
        assert_eq!(events[0]["object"], "chat.completion.chunk");
        assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
        let deltas: Vec<&str> = events
            .iter()
            .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
            .filter(|d| !d.is_empty())
            .collect();
        assert_eq!(deltas.concat(), text(&expected, 0), "stop {stop:?}");
        assert!(
            deltas.len() > 3,
            "the text came in {} deltas, not as it was generated",
            deltas.len()
        );
        if let Some(s) = &stop {
            assert!(deltas.iter().all(|d| !d.contains(s.as_str())), "{deltas:?}");
        }
        let finish: Vec<&Value> = events
            .iter()
            .map(|e| &e["choices"][0]["finish_reason"])
            .filter(|f| !f.is_null())
            .collect();
        assert_eq!(
            finish,
            vec![&expected["choices"][0]["finish_reason"]],
            "one last chunk carries the finish reason"
        );
        let logprobs: Vec<&Value> = events
            .iter()
            .filter_map(|e| e["choices"][0]["logprobs"]["content"].as_array())
            .flatten()
            .collect();
        let expected_lp: Vec<&Value> = expected["choices"][0]["logprobs"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(logprobs, expected_lp);
        let usage = &events.last().unwrap()["usage"];
        assert_eq!(usage, &expected["usage"]);
    }
}

#[test]
fn n_choices_are_the_single_requests_of_consecutive_seeds() {
    let server = tiny_server(ServeConfig::default());
    let ask = |n: usize, seed: u64| {
        let body = json!({"messages": user("pick"), "temperature": 4.0, "n": n, "seed": seed,
            "max_tokens": 24});
        let (status, v) = chat(&server, &body);
        assert_eq!(status, 200, "{v}");
        v
    };
    let three = ask(3, 40);
    let texts: Vec<String> = (0..3).map(|i| text(&three, i)).collect();
    let singles: Vec<String> = (0..3).map(|i| text(&ask(1, 40 + i), 0)).collect();
    assert_eq!(texts, singles);
    assert!(
        texts[0] != texts[1] || texts[1] != texts[2],
        "three seeds gave one answer: {texts:?}"
    );
    // Streamed, the three choices come interleaved under their indices.
    let mut body = json!({"messages": user("pick"), "temperature": 4.0, "n": 3, "seed": 40,
        "max_tokens": 24});
    body["stream"] = json!(true);
    let events = chat_stream(&server, &body);
    let streamed: Vec<String> = (0..3)
        .map(|i| {
            events
                .iter()
                .flat_map(|e| e["choices"].as_array().unwrap())
                .filter(|c| c["index"] == i)
                .filter_map(|c| c["delta"]["content"].as_str())
                .collect()
        })
        .collect();
    assert_eq!(streamed, singles);
}

#[test]
fn a_full_queue_answers_429_at_once() {
    let server = tiny_server(ServeConfig {
        max_queue: 2,
        max_batch: 2,
        ..ServeConfig::default()
    });
    // A streamed request with two choices fills the queue.
    let mut busy = long_request(4000);
    busy["n"] = json!(2);
    let conn = open_stream(&server, &busy);
    assert_eq!(server.stats().queued, 2);
    let t = Instant::now();
    let (status, v) = chat(&server, &long_request(5));
    assert_eq!(status, 429, "{v}");
    assert!(t.elapsed() < Duration::from_secs(5), "429 came late");
    assert_eq!(v["error"]["code"], "rate_limit_exceeded", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("busy"),
        "{v}"
    );
    // More choices than the queue ever holds is the request's fault, not a busy server.
    let mut wide = long_request(5);
    wide["n"] = json!(3);
    let (status, v) = chat(&server, &wide);
    assert_eq!((status, &v["error"]["param"]), (400, &json!("n")), "{v}");
    // Room again once the queue drained (the busy client leaves).
    drop(conn);
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.stats().queued > 0 {
        assert!(Instant::now() < deadline, "the queue never drained");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (status, v) = chat(&server, &long_request(5));
    assert_eq!(status, 200, "{v}");
    let stats = server.stats();
    assert_eq!((stats.refused, stats.cancelled), (1, 2));
}

/// Sends `body` as a streamed request on a raw connection and reads until its first content
/// delta (the request is decoding then); the connection is returned open.
fn open_stream(server: &ServerHandle, body: &Value) -> TcpStream {
    open_stream_until(server, body, |line| {
        line.contains("\"content\"") && !line.contains("role")
    })
}

/// [`open_stream`], reading until an event line for which `seen` holds.
fn open_stream_until(server: &ServerHandle, body: &Value, seen: fn(&str) -> bool) -> TcpStream {
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let payload = streamed.to_string();
    let conn = post_raw(server, &payload);
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "stream ended");
        if line.starts_with("data: ") && seen(&line) {
            return conn;
        }
    }
}

#[test]
fn a_client_that_leaves_a_stream_has_its_sequence_dropped() {
    let server = tiny_server(ServeConfig::default());
    let conn = open_stream(&server, &long_request(4000));
    assert_eq!(server.stats().running, 1);
    conn.shutdown(std::net::Shutdown::Both).unwrap();
    drop(conn);
    let deadline = Instant::now() + Duration::from_secs(30);
    wait_for_cancel(&server, deadline);
    let stats = server.stats();
    assert_eq!((stats.cancelled, stats.running, stats.queued), (1, 0, 0));
    assert_eq!(stats.finished, 0, "the abandoned sequence ran to its end");
    // The server goes on serving.
    let (status, v) = chat(&server, &long_request(4));
    assert_eq!(status, 200, "{v}");
}

#[test]
fn a_waiting_request_whose_client_leaves_leaves_the_queue() {
    let server = tiny_server(ServeConfig {
        max_batch: 1,
        ..ServeConfig::default()
    });
    let running = open_stream(&server, &long_request(4000));
    // The second waits for the row (its stream is open: the role chunk came).
    let waiting = open_stream_until(&server, &long_request(4000), |l| l.contains("role"));
    let stats = server.stats();
    assert_eq!((stats.queued, stats.running), (2, 1));
    drop(waiting);
    // Seen once hyper notices the closed connection, at the next step.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.stats().cancelled == 0 {
        assert!(
            Instant::now() < deadline,
            "the waiting request was never dropped"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = server.stats();
    assert_eq!(
        (stats.queued, stats.running, stats.cancelled, stats.finished),
        (1, 1, 1, 0),
        "only the waiting request left"
    );
    drop(running);
}

#[test]
fn a_client_that_hangs_up_on_a_plain_request_has_its_sequence_dropped() {
    let server = tiny_server(ServeConfig::default());
    let payload = long_request(4000).to_string();
    let conn = post_raw(&server, &payload);
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.stats().running == 0 {
        assert!(Instant::now() < deadline, "the request never started");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(conn);
    wait_for_cancel(&server, deadline);
    let stats = server.stats();
    assert_eq!((stats.cancelled, stats.running, stats.finished), (1, 0, 0));
    let (status, v) = chat(&server, &long_request(4));
    assert_eq!(status, 200, "{v}");
}

#[test]
fn bad_input_is_a_400_and_the_model_keeps_serving() {
    let server = tiny_server(ServeConfig::default());
    let url = format!("{}/chat/completions", server.base_url());
    let bodies = [
        "{not json".to_string(),
        json!({"messages": user("x"), "n": 0}).to_string(),
        json!({"messages": user("x"), "stream": "yes"}).to_string(),
        json!({"messages": user("x"), "stream": true, "stream_options": 3}).to_string(),
        json!({"messages": user("x"), "max_tokens": -1}).to_string(),
        json!({"messages": [{"role": "user", "content": 5}]}).to_string(),
        json!({"messages": user("x"), "top_p": 2}).to_string(),
        "[]".to_string(),
    ];
    for body in &bodies {
        let mut resp = agent()
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.as_str())
            .unwrap();
        let status = resp.status().as_u16();
        let mut text = String::new();
        resp.body_mut()
            .as_reader()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(status, 400, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
    }
    let (status, v) = chat(&server, &long_request(4));
    assert_eq!(status, 200, "{v}");
    assert_eq!(server.stats().finished, 1);
}

/// Waits (until `deadline`) for the server to cancel an abandoned sequence, which must not
/// have run to its end meanwhile.
fn wait_for_cancel(server: &ServerHandle, deadline: Instant) {
    while server.stats().cancelled == 0 {
        let stats = server.stats();
        assert_eq!(stats.finished, 0, "the abandoned sequence ran to its end");
        assert!(
            Instant::now() < deadline,
            "the abandoned sequence was never cancelled: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A connection that has sent `payload` as a chat-completions request, its answer unread.
fn post_raw(server: &ServerHandle, payload: &str) -> TcpStream {
    let mut conn = TcpStream::connect(server.addr()).unwrap();
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{payload}",
        payload.len()
    )
    .unwrap();
    conn
}

/// POSTs a completions request; (status, parsed body).
fn complete(server: &ServerHandle, body: &Value) -> (u16, Value) {
    let (status, text) = post_json(server, "completions", body);
    (status, serde_json::from_str(&text).unwrap())
}

/// The tiny model's policy, for rendering prompts and decoding tokens as the server does.
fn tiny_codec() -> std::sync::Arc<dyn quester_train::policy::TextCodec> {
    let cfg = tiny_config(&[]);
    quester_train::api::build_policy(&cfg)
        .unwrap()
        .text_codec()
        .unwrap()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// A prompt sent as token ids (rendered by the caller, as a trainer renders its own) is
/// answered as the same conversation sent as messages: the same text and log-probs for the
/// same seed, and the choice's token ids are the sampled tokens, which decode to the text.
#[test]
fn a_token_id_prompt_answers_as_its_conversation_with_the_sampled_token_ids() {
    let server = tiny_server(ServeConfig::default());
    let codec = tiny_codec();
    let messages = vec![quester_train::policy::ChatMessage::user("pick an arm")];
    let prompt = codec.encode(&messages, "").unwrap();
    for seed in [3u64, 4] {
        let (status, chat_v) = chat(
            &server,
            &json!({"messages": user("pick an arm"), "temperature": 1.5, "seed": seed,
                "max_tokens": 12, "logprobs": true}),
        );
        assert_eq!(status, 200, "{chat_v}");
        let (status, v) = complete(
            &server,
            &json!({"prompt": prompt, "temperature": 1.5, "seed": seed, "max_tokens": 12,
                "logprobs": 0, "return_token_ids": true}),
        );
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["object"], "text_completion");
        let choice = &v["choices"][0];
        assert_eq!(choice["text"].as_str().unwrap(), text(&chat_v, 0));
        assert_eq!(ids(&choice["prompt_token_ids"]), prompt);
        let tokens = ids(&choice["token_ids"]);
        assert!(!tokens.is_empty());
        assert_eq!(codec.decode(&tokens).unwrap(), text(&chat_v, 0));
        let lp: Vec<f64> = choice["logprobs"]["token_logprobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let chat_lp: Vec<f64> = chat_v["choices"][0]["logprobs"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["logprob"].as_f64().unwrap())
            .collect();
        assert_eq!(lp, chat_lp);
        let named: Vec<String> = tokens.iter().map(|t| format!("token_id:{t}")).collect();
        assert_eq!(choice["logprobs"]["tokens"], json!(named));
        assert_eq!(v["usage"]["prompt_tokens"], prompt.len());
        assert_eq!(v["usage"]["completion_tokens"], tokens.len());
    }
    // Without `return_token_ids` the choice carries no ids.
    let (status, v) = complete(&server, &json!({"prompt": prompt, "max_tokens": 3}));
    assert_eq!(status, 200, "{v}");
    assert!(v["choices"][0].get("token_ids").is_none(), "{v}");
    assert!(v["choices"][0]["logprobs"].is_null(), "{v}");
}

/// A stop string ends the text before it, or after it with `include_stop_str_in_output`; the
/// token ids are every sampled token either way.
#[test]
fn a_stop_string_cuts_the_text_not_the_token_ids() {
    let server = tiny_server(ServeConfig::default());
    let codec = tiny_codec();
    let prompt = codec
        .encode(
            &[quester_train::policy::ChatMessage::user(
                "tell me a long story",
            )],
            "",
        )
        .unwrap();
    let base = json!({"prompt": prompt, "temperature": 0, "max_tokens": 16,
        "return_token_ids": true});
    let (status, whole) = complete(&server, &base);
    assert_eq!(status, 200, "{whole}");
    let full = whole["choices"][0]["text"].as_str().unwrap().to_string();
    // A stop string from the middle of the greedy answer.
    let chars: Vec<char> = full.chars().collect();
    assert!(chars.len() >= 8, "{full:?}");
    let stop: String = chars[4..6].iter().collect();
    let before = &full[..full.find(&stop).unwrap()];
    for include in [false, true] {
        let mut body = base.clone();
        body["stop"] = json!([stop]);
        body["include_stop_str_in_output"] = json!(include);
        let (status, v) = complete(&server, &body);
        assert_eq!(status, 200, "{v}");
        let choice = &v["choices"][0];
        let want = if include {
            format!("{before}{stop}")
        } else {
            before.to_string()
        };
        assert_eq!(choice["text"].as_str().unwrap(), want);
        assert_eq!(choice["finish_reason"], "stop");
        let decoded = codec.decode(&ids(&choice["token_ids"])).unwrap();
        assert!(
            decoded.starts_with(&format!("{before}{stop}")),
            "{decoded:?}"
        );
    }
}

#[test]
fn bad_completion_requests_are_a_400_naming_the_field() {
    let server = tiny_server(ServeConfig::default());
    let cases = [
        (json!({"prompt": "text"}), "prompt"),
        (json!({"prompt": []}), "prompt"),
        (json!({"prompt": [[1, 2], [3]]}), "prompt"),
        (json!({"prompt": [1, -2]}), "prompt"),
        (json!({"prompt": [1, 4_000_000]}), "prompt"),
        (json!({"max_tokens": 3}), "prompt"),
        (json!({"prompt": [1, 2], "logprobs": 5}), "logprobs"),
        (json!({"prompt": [1, 2], "stream": true}), "stream"),
        (json!({"prompt": [1, 2], "echo": true}), "echo"),
        (json!({"prompt": [1, 2], "top_p": 0}), "top_p"),
    ];
    for (body, field) in &cases {
        let (status, v) = complete(&server, body);
        assert_eq!(status, 400, "{body}: {v}");
        assert_eq!(v["error"]["param"], *field, "{body}: {v}");
    }
    // A batch of one prompt is the prompt.
    let (status, v) = complete(&server, &json!({"prompt": [[1, 2, 3]], "max_tokens": 2}));
    assert_eq!(status, 200, "{v}");
}

/// The trainer's side of remote rollouts: requests rendered here (a forced opening, a stop
/// string), sent as token ids to two servers, come back as the generations the trainer's own
/// engine gives for the same seeds: the same prompt ids, sampled ids and text, in the
/// requests' order, and the same log-probs up to the last bits that a batch of another
/// composition moves.
#[test]
fn the_remote_sampler_gives_the_native_engines_generations() {
    use quester_serve::openai::{OpenAiConfig, RemoteSampler};
    use quester_train::policy::{ChatMessage, GenRequest, SamplingParams};

    let servers = [
        tiny_server(ServeConfig::default()),
        tiny_server(ServeConfig::default()),
    ];
    let cfg = tiny_config(&[]);
    let mut native = quester_train::api::build_policy(&cfg).unwrap();
    let urls: Vec<String> = servers.iter().map(ServerHandle::base_url).collect();
    let mut remote = RemoteSampler::new(
        &urls,
        &OpenAiConfig {
            model: "tiny".into(),
            ..OpenAiConfig::default()
        },
        native.text_codec().unwrap(),
    )
    .unwrap();
    let requests: Vec<GenRequest> = (0..5u64)
        .map(|i| GenRequest {
            messages: vec![ChatMessage::user(format!("board {i}: reveal a cell"))],
            response_prefix: "<action>".into(),
            prompt_ids: None,
            params: SamplingParams {
                temperature: 1.3,
                max_new_tokens: 10 + i as usize,
                stop: vec!["</action>".into(), "e".into()],
                // A seed above i64::MAX travels as a negative integer and is read back.
                seed: if i == 0 { u64::MAX - 3 } else { 100 + i },
                ..SamplingParams::default()
            },
        })
        .collect();
    let want = native.generate(&requests).unwrap();
    let got = remote.generate(&requests).unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(
            (&g.text, &g.prompt_ids, &g.response_ids, &g.temperatures),
            (&w.text, &w.prompt_ids, &w.response_ids, &w.temperatures)
        );
        let gap = g
            .logprobs
            .iter()
            .zip(&w.logprobs)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(gap < 1e-5, "log-probs differ by {gap}");
    }
    assert!(want.iter().all(|g| !g.response_ids.is_empty()));
    // Both servers took a share.
    let finished: Vec<u64> = servers.iter().map(|s| s.stats().finished).collect();
    assert!(finished.iter().all(|&n| n > 0), "{finished:?}");
}

/// One update that raises the log-prob of every token of `gens` (so the adapter moves).
pub(crate) fn raise_every_token(
    policy: &mut dyn quester_train::policy::TrainablePolicy,
    gens: &[quester_train::policy::Generation],
) {
    use quester_train::policy::{LossValue, TrainSeq};
    let seqs: Vec<TrainSeq<'_>> = gens
        .iter()
        .map(|g| TrainSeq {
            prompt_ids: &g.prompt_ids,
            response_ids: &g.response_ids,
            current_logprobs: None,
        })
        .collect();
    let stats = policy
        .update(
            &seqs,
            &mut |lp: &[Vec<f64>]| LossValue {
                loss: -lp.iter().flatten().sum::<f64>(),
                dlogp: lp.iter().map(|v| vec![-1.0; v.len()]).collect(),
            },
            0.0,
        )
        .unwrap();
    assert!(
        !stats.skipped_nonfinite && stats.grad_norm > 0.0,
        "{stats:?}"
    );
}

/// A PEFT adapter of the tiny model with random (non-zero) factors, written to `dir`.
fn tiny_adapter(dir: &std::path::Path, seed: u64) {
    use candle_core::{Device, Tensor};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../quester-model/tests/fixtures/tiny-llama");
    let mut model = quester_model::load_hf_dir(&path).unwrap().model;
    model
        .attach_lora(&quester_model::LoraConfig {
            rank: 4,
            alpha: 8.0,
            target_modules: vec!["q_proj".into(), "v_proj".into(), "down_proj".into()],
            seed,
        })
        .unwrap();
    for (i, (_, var)) in model.lora_weights().into_iter().enumerate() {
        let n = var.elem_count();
        let vals: Vec<f32> = (0..n)
            .map(|j| (((j * 7 + i * 13 + seed as usize) % 17) as f32 - 8.0) * 0.05)
            .collect();
        var.set(&Tensor::from_vec(vals, var.shape(), &Device::Cpu).unwrap())
            .unwrap();
    }
    quester_model::export::export_peft(dir, &model, "tiny").unwrap();
}

/// A trainer's weight sync: the adapter loaded under a versioned name answers as the trainer's
/// own policy with that adapter does; a request naming another version is refused while it is
/// loaded; unloading serves the base model again.
#[test]
fn a_loaded_adapter_answers_as_the_policy_with_it_and_versions_are_enforced() {
    use quester_train::policy::{ChatMessage, GenRequest, SamplingParams};
    let tmp = tempfile::tempdir().unwrap();
    let (v1, v2) = (tmp.path().join("v1"), tmp.path().join("v2"));
    tiny_adapter(&v1, 1);
    tiny_adapter(&v2, 2);
    let server = tiny_server(ServeConfig::default());
    let codec = tiny_codec();
    let prompt = codec
        .encode(&[ChatMessage::user("pick an arm")], "")
        .unwrap();
    let ask = |model: Option<&str>| {
        let mut body = json!({"prompt": prompt, "temperature": 1.0, "seed": 5, "max_tokens": 8,
            "return_token_ids": true});
        if let Some(m) = model {
            body["model"] = json!(m);
        }
        complete(&server, &body)
    };
    // What the trainer's own policy gives with each adapter.
    let cfg = tiny_config(&[]);
    let mut policy = quester_train::api::build_policy(&cfg).unwrap();
    let request = GenRequest {
        messages: Vec::new(),
        response_prefix: String::new(),
        prompt_ids: Some(prompt.clone()),
        params: SamplingParams {
            temperature: 1.0,
            max_new_tokens: 8,
            seed: 5,
            ..SamplingParams::default()
        },
    };
    let mut expect = |dir: Option<&std::path::Path>| {
        policy.set_adapter(dir).unwrap();
        policy.generate(std::slice::from_ref(&request)).unwrap()[0]
            .response_ids
            .clone()
    };
    let (base_ids, v1_ids, v2_ids) = (expect(None), expect(Some(&v1)), expect(Some(&v2)));
    assert!(
        base_ids != v1_ids && v1_ids != v2_ids,
        "the adapters change nothing"
    );

    let (status, v) = ask(None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(ids(&v["choices"][0]["token_ids"]), base_ids);
    let load = |name: &str, dir: &std::path::Path| {
        post_json(
            &server,
            "load_lora_adapter",
            &json!({"lora_name": name, "lora_path": dir.display().to_string(),
                "load_inplace": true}),
        )
    };
    let (status, text) = load("policy-v1", &v1);
    assert_eq!(status, 200, "{text}");
    let (status, v) = ask(Some("policy-v1"));
    assert_eq!(status, 200, "{v}");
    assert_eq!(ids(&v["choices"][0]["token_ids"]), v1_ids);
    let (status, text) = load("policy-v2", &v2);
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        ids(&ask(Some("policy-v2")).1["choices"][0]["token_ids"]),
        v2_ids
    );
    // The old version is gone: a request for it is refused, not answered by v2.
    let (status, v) = ask(Some("policy-v1"));
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("policy-v2"),
        "{v}"
    );
    let models = models(&server);
    assert!(models.contains("\"policy-v2\""), "{models}");
    // Bad adapter requests name their field; the loaded adapter stays.
    let (status, text) = load("policy-v3", tmp.path());
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("lora_path"), "{text}");
    let (status, text) = post_json(
        &server,
        "unload_lora_adapter",
        &json!({"lora_name": "policy-v1"}),
    );
    assert_eq!(status, 400, "{text}");
    assert_eq!(ids(&ask(None).1["choices"][0]["token_ids"]), v2_ids);
    // Unloaded: the base model again.
    let (status, text) = post_json(
        &server,
        "unload_lora_adapter",
        &json!({"lora_name": "policy-v2"}),
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(ids(&ask(None).1["choices"][0]["token_ids"]), base_ids);
}

/// Training with rollouts on servers (`rollout.engine = "openai"`): the first generation
/// loads the trainer's adapter into every server, an update makes the next generation load
/// the next version, and each time the servers sample exactly the tokens the trainer's own
/// engine samples with its current weights.
#[test]
fn remote_rollouts_follow_every_update_of_the_trainer() {
    use quester_train::policy::remote::RemoteRolloutPolicy;
    use quester_train::policy::{ChatMessage, GenRequest, SamplingParams};

    let servers = [
        tiny_server(ServeConfig::default()),
        tiny_server(ServeConfig::default()),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tiny_config(&[
        "training.optimizer.lr=0.5".into(),
        "rollout.engine=openai".into(),
        format!(
            "rollout.servers=[\"{}\", \"{}\"]",
            servers[0].base_url(),
            servers[1].base_url()
        ),
    ]);
    let trainer = quester_train::api::build_policy(&cfg).unwrap();
    let sampler =
        quester_serve::openai::rollout_sampler(&cfg, trainer.text_codec().unwrap()).unwrap();
    let mut policy = RemoteRolloutPolicy::new(trainer, sampler, tmp.path());
    let requests: Vec<GenRequest> = (0..4u64)
        .map(|i| GenRequest {
            messages: vec![ChatMessage::user(format!("arm {i}?"))],
            response_prefix: "<action>".into(),
            prompt_ids: None,
            params: SamplingParams {
                temperature: 1.0,
                max_new_tokens: 6,
                seed: 7 + i,
                ..SamplingParams::default()
            },
        })
        .collect();
    let ids = |g: &[quester_train::policy::Generation]| -> Vec<Vec<u32>> {
        g.iter().map(|x| x.response_ids.clone()).collect()
    };
    let before = policy.generate(&requests).unwrap();
    assert_eq!(policy.version(), 1);
    let local = policy.trainer_mut().generate(&requests).unwrap();
    assert_eq!(ids(&before), ids(&local));
    raise_every_token(&mut policy, &before);
    let after = policy.generate(&requests).unwrap();
    assert_eq!(policy.version(), 2);
    let local = policy.trainer_mut().generate(&requests).unwrap();
    assert_eq!(ids(&after), ids(&local));
    assert_ne!(ids(&after), ids(&before), "the update changed no sample");
    // Both servers hold the new version; the old adapter's files are gone.
    for s in &servers {
        let models = models(s);
        assert!(models.contains("\"policy-v2\""), "{models}");
    }
    assert!(!tmp.path().join("policy-v1").exists());
    assert!(tmp.path().join("policy-v2/adapter_config.json").is_file());
}

/// `quester train`'s path with `rollout.engine = "openai"`: a LaMer bandit step on the tiny
/// model samples on a server, loads the adapter, and records the sampler / trainer gap (the
/// server runs the same engine, so the gap is rounding only, and TIS weighs every token about 1).
#[test]
fn a_training_run_on_a_server_records_the_sampler_gap() {
    let server = tiny_server(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tiny = path.join("../quester-model/tests/fixtures/tiny-llama");
    let overrides: Vec<String> = [
        format!("model.path={}", tiny.display()),
        "rollout.engine=\"openai\"".into(),
        format!("rollout.servers=[\"{}\"]", server.base_url()),
        "training.steps=1".into(),
        "rollout.tasks_per_step=2".into(),
        "rollout.group_size=2".into(),
        "rollout.temperature=1.0".into(),
        "rollout.top_p=1.0".into(),
        "rollout.top_k=0".into(),
        "eval.at_end=false".into(),
        "algorithm.loss.rollout_correction=\"tis\"".into(),
    ]
    .into();
    let cfg = quester_train::TrainConfig::load(
        &path.join("../../configs/lamer_bandit_cpu.toml"),
        &overrides,
    )
    .unwrap();
    let run = tmp.path().join("run");
    quester_train::train_with(
        &cfg,
        &run,
        false,
        Some(&quester_serve::openai::rollout_sampler),
    )
    .unwrap();
    let rows = quester_train::run_dir::RunDir::new(&run)
        .read_metrics()
        .unwrap();
    let gap = rows[0]["sampler_logp_gap"].as_f64().expect("a gap logged");
    assert!(gap < 1e-4, "{gap}");
    let kl = rows[0]["sampler_kl"].as_f64().expect("a KL logged");
    assert!((0.0..1e-8).contains(&kl), "{kl}");
    let w = rows[0]["tis_weight_mean"]
        .as_f64()
        .expect("TIS weights logged");
    assert!((w - 1.0).abs() < 1e-4, "{w}");
    assert_eq!(rows[0]["tis_truncated_fraction"].as_f64(), Some(0.0));
    assert!(server.stats().finished > 0);
    assert!(run.join("adapters/policy-v1/adapter_config.json").is_file());
}

/// A rollout server that dies is taken out: its requests go to the other, with the same
/// generations (each request carries its seed), and later calls skip it. With every server
/// gone the call fails naming each one, and a weight sync that reaches none fails too.
#[test]
fn a_dead_servers_requests_go_to_the_others() {
    use quester_serve::openai::{OpenAiConfig, RemoteSampler};
    use quester_train::policy::remote::RolloutSampler;
    use quester_train::policy::{ChatMessage, GenRequest, SamplingParams};

    let alive = tiny_server(ServeConfig::default());
    let dead = tiny_server(ServeConfig::default());
    let dead_url = dead.base_url();
    dead.shutdown();
    let cfg = tiny_config(&[]);
    let mut native = quester_train::api::build_policy(&cfg).unwrap();
    let config = OpenAiConfig {
        model: "tiny".into(),
        max_retries: 1,
        backoff_initial_ms: 10,
        ..OpenAiConfig::default()
    };
    let urls = [dead_url.clone(), alive.base_url()];
    let mut remote = RemoteSampler::new(&urls, &config, native.text_codec().unwrap()).unwrap();
    let requests: Vec<GenRequest> = (0..4u64)
        .map(|i| GenRequest {
            messages: vec![ChatMessage::user(format!("cell {i}?"))],
            response_prefix: String::new(),
            prompt_ids: None,
            params: SamplingParams {
                temperature: 1.0,
                max_new_tokens: 6,
                seed: 40 + i,
                ..SamplingParams::default()
            },
        })
        .collect();
    let want = native.generate(&requests).unwrap();
    let ids = |g: &[quester_train::policy::Generation]| -> Vec<Vec<u32>> {
        g.iter().map(|x| x.response_ids.clone()).collect()
    };
    let got = RolloutSampler::generate(&mut remote, &requests).unwrap();
    assert_eq!(ids(&got), ids(&want));
    assert_eq!(remote.servers_out(), vec![dead_url.as_str()]);
    assert_eq!(alive.stats().finished, 4);
    // The next call goes straight to the live server.
    let again = RolloutSampler::generate(&mut remote, &requests).unwrap();
    assert_eq!(ids(&again), ids(&want));
    assert_eq!(alive.stats().finished, 8);
    // A sync while one is out still succeeds on the live one.
    let tmp = tempfile::tempdir().unwrap();
    let adapter = tmp.path().join("policy-v1");
    tiny_adapter(&adapter, 3);
    remote.load_adapter(&adapter, "policy-v1").unwrap();
    assert_eq!(remote.model(), "policy-v1");
    let alive_url = alive.base_url();
    alive.shutdown();
    let e = RolloutSampler::generate(&mut remote, &requests)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("every rollout server is out") && e.contains(&alive_url),
        "{e}"
    );
    let e = remote
        .load_adapter(&adapter, "policy-v2")
        .unwrap_err()
        .to_string();
    assert!(e.contains(&dead_url) && e.contains(&alive_url), "{e}");
}

/// SGE's rules inside a response on a server: sampled in segments that stop at the marker,
/// the strategy tokens at one temperature and the rest at the switched one, the scaffold's
/// text forced (temperature 0) where the native engine forces it. The first segment carries
/// the response's seed, so up to the forced text the server's tokens are the native engine's.
#[test]
fn sge_strategy_tokens_are_sampled_in_segments_on_a_server() {
    use quester_serve::openai::{OpenAiConfig, RemoteSampler};
    use quester_train::policy::{
        ChatMessage, GenRequest, SamplingParams, Scaffold, TemperatureSwitch,
    };

    let server = tiny_server(ServeConfig::default());
    let cfg = tiny_config(&[]);
    let mut native = quester_train::api::build_policy(&cfg).unwrap();
    let codec = native.text_codec().unwrap();
    let mut remote = RemoteSampler::new(
        &[server.base_url()],
        &OpenAiConfig {
            model: "tiny".into(),
            ..OpenAiConfig::default()
        },
        std::sync::Arc::clone(&codec),
    )
    .unwrap();
    let (marker, after) = ("</strategy>", "\n<action>");
    let requests: Vec<GenRequest> = (0..3u64)
        .map(|i| GenRequest {
            messages: vec![ChatMessage::user(format!("plan {i}"))],
            response_prefix: "<strategy>".into(),
            prompt_ids: None,
            params: SamplingParams {
                temperature: 1.5,
                max_new_tokens: 60,
                seed: 70 + i,
                scaffold: Some(Scaffold {
                    marker: marker.into(),
                    text: after.into(),
                    max_tokens: 6,
                }),
                temperature_switch: Some(TemperatureSwitch {
                    marker: marker.into(),
                    temperature: 0.5,
                }),
                ..SamplingParams::default()
            },
        })
        .collect();
    let want = native.generate(&requests).unwrap();
    let got = quester_train::policy::Policy::generate(&mut remote, &requests).unwrap();
    let forced = codec.encode_text(&format!("{marker}{after}")).unwrap();
    for (g, w) in got.iter().zip(&want) {
        // The tiny random model never writes the marker: both force it after 6 tokens.
        let head = 6 + forced.len();
        assert_eq!(g.response_ids[..head], w.response_ids[..head]);
        assert_eq!(g.response_ids[6..head], forced[..]);
        assert_eq!(g.temperatures[..6], [1.5f32; 6]);
        assert_eq!(g.temperatures[6..head], w.temperatures[6..head]);
        assert!(g.temperatures[6..head].iter().all(|&t| t == 0.0));
        assert!(
            g.temperatures[head..].iter().all(|&t| t == 0.5),
            "{:?}",
            g.temperatures
        );
        assert!(g.response_ids.len() > head && g.response_ids.len() <= 60);
        assert_eq!(codec.decode(&g.response_ids).unwrap(), g.text);
        assert!(g.text.contains(&format!("{marker}{after}")), "{}", g.text);
        for (a, b) in g.logprobs[..6].iter().zip(&w.logprobs[..6]) {
            assert!((a - b).abs() < 1e-5);
        }
    }
    // Two segments a response: three requests, then three.
    assert_eq!(server.stats().finished, 6);
}
