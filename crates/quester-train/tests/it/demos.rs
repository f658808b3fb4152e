//! Expert demonstrations (`quester demos`) and the expert's evaluation: the lines are the
//! rollout's own prompts with the expert's answers, reproducible, never from held-out tasks,
//! and the noisy expert's random moves are played but never written.

use quester_train::demos::{write_demos, DemoOptions};
use quester_train::{EvalSubject, TrainConfig};
use std::path::{Path, PathBuf};

fn preset(name: &str, overrides: &[&str]) -> TrainConfig {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../configs")
        .join(name);
    let mut o: Vec<String> = overrides.iter().map(ToString::to_string).collect();
    o.push("output.progress=false".into());
    TrainConfig::read(&p, &o).unwrap()
}

fn opts(episodes: usize, epsilon: f64) -> DemoOptions {
    DemoOptions {
        split: "train".into(),
        episodes,
        epsilon,
    }
}

fn lines(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn out(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

#[test]
fn tictactoe_demonstrations_are_chat_examples_of_the_presets_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = preset("sft_tictactoe_cpu.toml", &[]);
    let a = out(dir.path(), "a.jsonl");
    let s = write_demos(&cfg, &opts(12, 0.0), &a, None).unwrap();
    assert_eq!(s.episodes, 12);
    assert_eq!(s.random_turns, 0);
    assert_eq!(s.invalid_turns, 0);
    let ls = lines(&a);
    assert_eq!(ls.len(), s.examples);
    for l in &ls {
        let m = l["messages"].as_array().unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0]["role"], "user");
        assert_eq!(m[1]["role"], "assistant");
        let prompt = m[0]["content"].as_str().unwrap();
        let answer = m[1]["content"].as_str().unwrap();
        // The preset's terse template, rendered by the rollout (attempt and turn counters).
        assert!(prompt.starts_with("Tic-Tac-Toe"), "{prompt}");
        assert!(prompt.contains("Attempt 1 of 1, turn "), "{prompt}");
        // The answer opens with the preset's forced opening and is a listed empty cell.
        assert!(answer.starts_with("<action>(") && answer.ends_with(")</action>"));
        assert!(
            prompt.contains(answer),
            "{answer} is not an empty cell of {prompt}"
        );
        assert_eq!(l["env"], "tictactoe");
        // Perfect play never loses.
        assert!(l["return"].as_f64().unwrap() >= 0.0, "{l}");
    }
    // Both seats are played: even episodes first, odd ones second (an X-less first board).
    let first_of = |ep: u64| {
        ls.iter()
            .find(|l| l["episode"] == ep && l["turn"] == 0)
            .map(|l| l["messages"][0]["content"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert!(first_of(0).contains("You play X"));
    assert!(first_of(1).contains("You play O"), "{}", first_of(1));
    // Reproducible: the same request writes the same file.
    let b = out(dir.path(), "b.jsonl");
    write_demos(&cfg, &opts(12, 0.0), &b, None).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn the_noisy_experts_random_moves_are_played_but_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = preset("sft_tictactoe_cpu.toml", &[]);
    let p = out(dir.path(), "n.jsonl");
    let s = write_demos(&cfg, &opts(40, 0.5), &p, None).unwrap();
    let ls = lines(&p);
    assert_eq!(ls.len(), s.examples);
    // Each written line's episode had `turns` play turns; the random ones are missing.
    let mut per_episode = std::collections::BTreeMap::new();
    for l in &ls {
        per_episode.insert(l["episode"].as_u64().unwrap(), l["turns"].as_u64().unwrap());
    }
    let written_turns: u64 = per_episode.values().sum();
    assert!(s.random_turns > 0);
    assert!(written_turns as usize >= s.examples);
    // Random play against MCTS loses games the expert alone never loses.
    assert!(ls.iter().any(|l| l["return"].as_f64().unwrap() < 0.0));
    // About half of all turns were random (epsilon 0.5).
    let share = s.random_turns as f64 / (s.random_turns + s.examples) as f64;
    assert!((0.3..0.7).contains(&share), "{share}");
}

#[test]
fn demonstrations_never_come_from_held_out_tasks_or_unsupported_setups() {
    let dir = tempfile::tempdir().unwrap();
    let p = out(dir.path(), "x.jsonl");
    let cfg = preset("sft_tictactoe_cpu.toml", &[]);
    let mut o = opts(2, 0.0);
    o.split = "test".into();
    let e = write_demos(&cfg, &o, &p, None).unwrap_err().to_string();
    assert!(e.contains("--split test"), "{e}");
    // An env without an expert.
    let cfg = preset("grpo_instruction_cpu.toml", &[]);
    let e = write_demos(&cfg, &opts(2, 0.0), &p, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("has no expert") && e.contains("tictactoe"),
        "{e}"
    );
    // Training settings on an evaluation split.
    let cfg = preset("grpo_coding_cpu.toml", &["env.settings.split=\"test\""]);
    let e = write_demos(&cfg, &opts(2, 0.0), &p, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("env.settings.split"), "{e}");
    // A method whose responses need a segment the expert does not write.
    let cfg = preset("sge_sokoban_cpu.toml", &[]);
    let e = write_demos(&cfg, &opts(2, 0.0), &p, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("<strategy>") || e.contains("strategy"), "{e}");
    assert!(!p.exists(), "a refused request wrote a file");
}

#[test]
fn the_expert_evaluates_on_held_out_tasks_without_a_model() {
    let cfg = preset("sft_tictactoe_cpu.toml", &["eval.tasks=8"]);
    let r =
        quester_train::evaluate_subject(&cfg, EvalSubject::Expert { epsilon: 0.0 }, None).unwrap();
    assert_eq!(r.tasks, 8);
    assert_eq!(r.invalid_rate, 0.0);
    // Minimax against MCTS-1000 as the first player: never a loss.
    assert!(r.loss_at.iter().all(|&l| l == 0.0), "{:?}", r.loss_at);
}
