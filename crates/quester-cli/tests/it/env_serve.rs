//! `quester env serve`: starts, logs its address, answers OpenEnv's HTTP endpoints with the
//! env's own observations, and refuses a bad env or address at start.

use crate::common::{fails, quester};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

/// Kills the server when the test ends, also on failure.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server on a free port; returns it and the `host:port` its log names.
fn start(args: &[&str]) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quester"))
        .args(["env", "serve"])
        .args(args)
        .args(["--addr", "127.0.0.1:0"])
        .env("QUESTER_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start quester env serve");
    let stderr = child.stderr.take().expect("stderr");
    let server = Server(child);
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("log line");
        if let Some(rest) = line.split("on http://").nth(1) {
            let addr = rest.split(',').next().unwrap_or_default().to_string();
            return (server, addr);
        }
    }
    panic!("the server exited without logging its address");
}

/// One HTTP/1.1 request: (status, body).
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status");
    let json = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(json).unwrap_or_default())
}

#[test]
fn env_serve_answers_with_the_envs_own_observation() {
    let (_server, addr) = start(&["tictactoe", "--set", "max_turns=4", "--max-sessions", "2"]);
    let (status, health) = http(&addr, "GET", "/health", "");
    assert_eq!((status, health["status"].as_str()), (200, Some("healthy")));
    let (status, reset) = http(&addr, "POST", "/reset", r#"{"seed": 5}"#);
    assert_eq!(status, 200, "{reset}");
    let (status, state) = http(&addr, "GET", "/state", "");
    assert_eq!((status, state["max_turns"].as_u64()), (200, Some(4)));
    // The same observation `quester env run` prints for that seed and setting.
    let dir = tempfile::tempdir().unwrap();
    let actions = dir.path().join("none.txt");
    std::fs::write(&actions, "").unwrap();
    let out = quester(&[
        "env",
        "run",
        "tictactoe",
        "--seed",
        "5",
        "--set",
        "max_turns=4",
        "--actions",
        actions.to_str().unwrap(),
    ]);
    let first: serde_json::Value =
        serde_json::from_slice(&crate::common::ok(out).into_bytes()).unwrap();
    assert_eq!(reset["observation"]["text"], first["observation"]);
}

#[test]
fn env_serve_refuses_a_bad_env_or_address_at_start() {
    let err = fails(quester(&["env", "serve", "nope", "--addr", "127.0.0.1:0"]));
    assert!(err.contains("unknown environment `nope`"), "{err}");
    let err = fails(quester(&[
        "env",
        "serve",
        "sokoban",
        "--set",
        "num_boxez=2",
        "--addr",
        "127.0.0.1:0",
    ]));
    assert!(err.contains("num_boxez"), "{err}");
    let err = fails(quester(&[
        "env",
        "serve",
        "sokoban",
        "--addr",
        "not-an-address",
    ]));
    assert!(err.contains("cannot listen on not-an-address"), "{err}");
}

#[test]
fn env_serve_trial_plays_attempts_and_refuses_bad_options() {
    let (_server, addr) = start(&["sokoban", "--trial", "attempts=2,reflection=true"]);
    let (status, reset) = http(&addr, "POST", "/reset", r#"{"seed": 5}"#);
    assert_eq!(status, 200, "{reset}");
    assert_eq!(reset["metadata"]["phase"], "play");
    assert_eq!(reset["metadata"]["attempts"], 2);
    let err = fails(quester(&[
        "env",
        "serve",
        "sokoban",
        "--trial",
        "attempts=11",
        "--addr",
        "127.0.0.1:0",
    ]));
    assert!(
        err.contains("`attempts`") && err.contains("1 to 10"),
        "{err}"
    );
    let err = fails(quester(&[
        "env",
        "serve",
        "sokoban",
        "--trial",
        "memory=everything",
        "--addr",
        "127.0.0.1:0",
    ]));
    assert!(
        err.contains("`memory`") && err.contains("history_and_reflection"),
        "{err}"
    );
}
