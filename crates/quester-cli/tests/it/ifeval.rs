//! `quester evaluate ifeval` end to end through the binary: a response file scored (the scores
//! equal the library's, bad files name their line), and a short generation run with the real
//! default model that continues a partial run instead of starting over.

use crate::common::{fails, ok, quester};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("quester-cli-ifeval-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn line(prompt: &str, response: &str) -> String {
    serde_json::json!({ "prompt": prompt, "response": response }).to_string()
}

fn scores(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("scores.json")).unwrap()).unwrap()
}

#[test]
fn a_response_file_is_scored_and_bad_lines_are_named() {
    let dir = scratch("responses");
    let prompts = quester_ifeval::prompts();
    // Every prompt answered with a comma-free, lowercase sentence.
    let answer = "this answer has no commas and no capital letters at all";
    let text: Vec<String> = prompts.iter().map(|p| line(&p.prompt, answer)).collect();
    let file = dir.join("r.jsonl");
    std::fs::write(&file, text.join("\n")).unwrap();
    let out = dir.join("out");
    let stdout = ok(quester(&[
        "evaluate",
        "ifeval",
        "--responses",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(stdout.contains("prompt-level accuracy"), "{stdout}");
    let expected = quester_ifeval::Report::from_scores(&quester_ifeval::score_prompts(
        prompts,
        &vec![answer; prompts.len()],
    ));
    let got = scores(&out);
    assert_eq!(got["prompts"], 541);
    assert_eq!(
        got["report"]["inst_strict"].as_f64(),
        Some(expected.inst_strict)
    );
    assert_eq!(
        got["report"]["prompt_loose"].as_f64(),
        Some(expected.prompt_loose)
    );
    assert!(expected.per_id["punctuation:no_comma"].strict == 66);
    let per_prompt = std::fs::read_to_string(out.join("per_prompt.jsonl")).unwrap();
    assert_eq!(per_prompt.lines().count(), 541);

    // A malformed third line, an unknown prompt, a missing prompt: errors that say where.
    let mut bad = text.clone();
    bad[2] = "{not json".into();
    std::fs::write(&file, bad.join("\n")).unwrap();
    let args = [
        "evaluate",
        "ifeval",
        "--responses",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let e = fails(quester(&args));
    assert!(e.contains("line 3"), "{e}");
    let mut bad = text.clone();
    bad[4] = line("Write a poem about Rust.", "ok");
    std::fs::write(&file, bad.join("\n")).unwrap();
    let e = fails(quester(&args));
    assert!(
        e.contains("line 5") && e.contains("not one of IFEval"),
        "{e}"
    );
    std::fs::write(&file, text[..540].join("\n")).unwrap();
    let e = fails(quester(&args));
    assert!(
        e.contains("1 of the 541 IFEval prompts have no response"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_model_answers_and_a_partial_run_continues() {
    let dir = scratch("generate");
    let out = dir.join("out");
    let args = [
        "evaluate",
        "ifeval",
        "--limit",
        "3",
        "--max-new-tokens",
        "8",
        "--batch",
        "2",
        "--out",
        out.to_str().unwrap(),
    ];
    let stdout = ok(quester(&args));
    assert!(stdout.contains("first 3 of 541 prompts only"), "{stdout}");
    let s = scores(&out);
    assert_eq!(s["prompts"], 3);
    assert_eq!(s["complete"], false);
    let responses = std::fs::read_to_string(out.join("responses.jsonl")).unwrap();
    assert_eq!(responses.lines().count(), 3);
    assert!(!out.join("responses.partial.jsonl").exists());

    // A killed run leaves a partial file: the next run keeps its answers and fills the rest.
    let first: Vec<serde_json::Value> = responses
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let partial = serde_json::json!({
        "index": 1,
        "response": "KEPT FROM BEFORE",
        "new_tokens": 3,
        "truncated": false,
    });
    std::fs::write(
        out.join("responses.partial.jsonl"),
        format!("{partial}\n{{cut"),
    )
    .unwrap();
    let settings = serde_json::json!({
        "policy": "default model (SmolLM2-135M-Instruct)",
        "max_new_tokens": 8,
        "temperature": 0.0,
        "seed": 0,
        "prompts": 3,
    });
    std::fs::write(out.join("settings.json"), settings.to_string()).unwrap();
    ok(quester(&args));
    let again: Vec<serde_json::Value> = std::fs::read_to_string(out.join("responses.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(again[1]["response"], "KEPT FROM BEFORE");
    // Greedy: the prompts answered anew get the same text as the first time.
    assert_eq!(again[0]["response"], first[0]["response"]);
    assert_eq!(again[2]["response"], first[2]["response"]);

    // Other settings over a partial run are refused, naming the saved ones.
    std::fs::write(out.join("responses.partial.jsonl"), format!("{partial}\n")).unwrap();
    std::fs::write(out.join("settings.json"), settings.to_string()).unwrap();
    let mut other = args.to_vec();
    other[5] = "16";
    let e = fails(quester(&other));
    assert!(e.contains("other settings"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_precision_names_the_allowed_ones() {
    let err = fails(quester(&[
        "evaluate",
        "ifeval",
        "--precision",
        "f16",
        "--limit",
        "1",
    ]));
    assert!(err.contains("f16: allowed f32, bf16, auto"), "{err}");
}
