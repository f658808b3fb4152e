//! The environment commands of the `quester` binary, driven as a user would.

use crate::common::quester;
use std::io::Write;
use std::process::{Command, Output};

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("quester-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

#[test]
fn solve_json_gives_optimal_moves() {
    // Player at (1,1), box at (1,2), target at (1,4): the box travels 2 cells and the player
    // starts right behind it, so two pushes to the right.
    let level = temp_file("easy.txt", "# # # # # #\n# P X _ O #\n# # # # # #\n");
    let out = quester(&["env", "solve", "--level", level.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"solvable": true, "moves": 2, "solution": ["right", "right"]})
    );
}

#[test]
fn solve_unsolvable_level_exits_zero() {
    // The box sits in a corner that is not a target.
    let level = temp_file(
        "stuck.txt",
        "0: # # # # #\n1: # X _ O #\n2: # _ P _ #\n3: # # # # #\n",
    );
    let out = quester(&["env", "solve", "--level", level.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"solvable": false, "moves": null, "solution": []})
    );
}

#[test]
fn solve_bad_level_fails_with_message() {
    let level = temp_file("bad.txt", "# # #\n# P Z\n# # #\n");
    let out = quester(&["env", "solve", "--level", level.to_str().unwrap(), "--json"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2"), "{err}");
    let missing = quester(&["env", "solve", "--level", "/nonexistent/level.txt"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/level.txt"));
}

#[test]
fn run_replays_responses_as_json_lines() {
    // The bandit with scout: scouting reveals the good arm; the replay shows it.
    let actions = temp_file("bandit.txt", "I will look first. <action>scout</action>\n");
    let out = quester(&[
        "env",
        "run",
        "bandit",
        "--seed",
        "7",
        "--actions",
        actions.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["step"], 0);
    assert!(rows[0]["observation"].as_str().unwrap().contains("Arms"));
    assert_eq!(rows[1]["step"], 1);
    assert_eq!(rows[1]["valid"], true);
    assert_eq!(rows[1]["done"], true);
    assert_eq!(rows[1]["won"], false);
    for key in ["observation", "reward", "done", "won", "valid", "info"] {
        assert!(rows[1].get(key).is_some(), "missing {key}");
    }
}

#[test]
fn run_sokoban_with_overrides_and_garbage_input() {
    let actions = temp_file(
        "sokoban.txt",
        "<action>up, left</action>\n\u{0}\u{7f} not an action at all\n<action>",
    );
    let out = quester(&[
        "env",
        "run",
        "sokoban",
        "--seed",
        "3",
        "--set",
        "max_moves=10",
        "--actions",
        actions.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[2]["valid"], false);
    assert_eq!(rows[3]["valid"], false);
}

#[test]
fn unknown_env_and_unknown_key_are_clear_errors() {
    let actions = temp_file("empty.txt", "");
    let out = quester(&[
        "env",
        "run",
        "sokobam",
        "--actions",
        actions.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sokobam") && err.contains("sokoban"), "{err}");
    let out = quester(&[
        "env",
        "run",
        "sokoban",
        "--set",
        "num_box=3",
        "--actions",
        actions.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("num_box") && err.contains("num_boxes"),
        "{err}"
    );
}

#[test]
fn play_reads_typed_actions_until_eof() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_quester"))
        .args(["play", "minesweeper", "--seed", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"(1, 1)\nnonsense\n:restart\n:quit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Row 1:"), "{text}");
    assert!(text.contains("valid false"), "{text}");
}

#[test]
fn run_webshop_purchase_reports_reward_parts() {
    use quester_envs::webshop::Catalogue;
    let cat = Catalogue::shared().unwrap();
    // The first goal whose product the search puts on the first results page.
    let (idx, goal) = cat
        .goals
        .iter()
        .enumerate()
        .find(|(_, g)| {
            cat.search(&g.text.to_lowercase(), 10)
                .iter()
                .any(|&p| cat.products[p].asin == g.asin)
        })
        .unwrap();
    let mut lines = vec![
        format!("<action>search[{}]</action>", goal.text),
        format!("<action>click[{}]</action>", goal.asin.to_lowercase()),
    ];
    for (_, value) in &goal.options {
        lines.push(format!("<action>click[{value}]</action>"));
    }
    lines.push("<action>click[buy now]</action>".to_string());
    let actions = temp_file("webshop.txt", &lines.join("\n"));
    let out = quester(&[
        "env",
        "run",
        "webshop",
        "--set",
        &format!("goal={idx}"),
        "--actions",
        actions.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = json_lines(&out);
    let last = rows.last().unwrap();
    assert_eq!(last["done"], true);
    assert_eq!(last["won"], true);
    assert_eq!(last["info"]["R"], 1.0);
    assert_eq!(last["info"]["goal"], goal.text.as_str());
    for row in &rows[1..] {
        assert_eq!(row["valid"], true, "{row}");
    }
}

#[test]
fn play_coding_takes_a_typed_multi_line_function() {
    use std::process::Stdio;
    // Seed 4 of the train split is `clamp`. The first answer misses the lower bound, the
    // second (in a fence) is right; typed code is wrapped in an action tag by `play`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_quester"))
        .args(["play", "coding", "--seed", "4"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"def clamp(x, low, high):\n    return min(x, high)\n.\n\
              ```python\ndef clamp(x, low, high):\n    return max(low, min(x, high))\n```\n.\n:quit\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("def clamp(x, low, high):"), "{text}");
    assert!(text.contains("passed 4 of 5 tests"), "{text}");
    assert!(text.contains("assert candidate(-3, 0, 10) == 0"), "{text}");
    assert!(text.contains("won true"), "{text}");
}

#[test]
fn run_coding_replays_json_string_responses() {
    let answers = [
        "no tags here",
        "<action>\ndef clamp(x, low, high):\n    return max(low, min(x, high))\n</action>",
    ]
    .map(|a| serde_json::to_string(a).unwrap())
    .join("\n");
    let actions = temp_file("coding.jsonl", &answers);
    let out = quester(&[
        "env",
        "run",
        "coding",
        "--seed",
        "4",
        "--json-strings",
        "--actions",
        actions.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["valid"], false);
    assert_eq!(rows[1]["info"]["outcome"], "no_action");
    assert_eq!(rows[2]["won"], true);
    assert_eq!(rows[2]["reward"], 1.0);
    assert_eq!(rows[2]["info"]["passed"], 5);
}
