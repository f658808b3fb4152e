//! GRPO raises the reward on a tiny Sokoban: one fixed room (three pushes to the right solve
//! it), one move per turn, the tabular policy (one logit per move and state). Seconds, fixed
//! seeds, honest margins.

use quester_train::api::{build_policy, env_factory};
use quester_train::trainer::Trainer;
use quester_train::TrainConfig;

const LEVEL: &str = "
# # # # # # #
# P _ X _ O #
# _ _ _ _ _ #
# # # # # # #
";

fn config(level: &std::path::Path, steps: usize) -> TrainConfig {
    let text = format!(
        r#"
[model]
kind = "tabular"
tabular_candidates = ["<action>up</action>", "<action>down</action>", "<action>left</action>", "<action>right</action>"]
[env]
name = "sokoban"
[env.settings]
level = "{level}"
max_turns = 6
max_moves_per_turn = 1
[prompt]
history_window = 0
[algorithm]
method = "grpo"
num_attempts = 1
do_reflection = false
reflection_type = "none"
[algorithm.advantage]
estimator = "grpo"
signal = "episode_score"
normalization = "mean_std_norm"
[rollout]
tasks_per_step = 4
group_size = 8
max_turns = 6
[training]
steps = {steps}
grad_clip = 0.0
mini_batch = 512
seed = 3
checkpoint_every = 0
[training.optimizer]
lr = 0.1
[eval]
every = 0
at_start = true
at_end = true
tasks = 64
num_attempts = 1
temperature = 1.0
top_p = 1.0
top_k = 0
[output]
progress = false
"#,
        level = level.display()
    );
    TrainConfig::from_table(text.parse().unwrap()).unwrap()
}

#[test]
fn grpo_raises_the_reward_and_solves_a_tiny_sokoban() {
    let tmp = tempfile::tempdir().unwrap();
    let level = tmp.path().join("level.txt");
    std::fs::write(&level, LEVEL).unwrap();
    let cfg = config(&level, 40);
    let mut t = Trainer::new(
        cfg.clone(),
        build_policy(&cfg).unwrap(),
        env_factory(&cfg),
        &tmp.path().join("run"),
        false,
    )
    .unwrap();
    let summary = t.run().unwrap();
    let rows = t.run_dir().read_metrics().unwrap();
    // Row 0 is the evaluation before training (eval.at_start).
    assert_eq!(rows[0]["kind"], "eval");
    let before = rows[0]["eval_pass@1"].as_f64().unwrap();
    let after = summary.last_metrics["eval_pass@1"].as_f64().unwrap();
    let reward =
        |r: &serde_json::Map<String, serde_json::Value>| r["reward_mean"].as_f64().unwrap();
    let early = rows[1..6].iter().map(reward).sum::<f64>() / 5.0;
    let late = rows[rows.len() - 5..].iter().map(reward).sum::<f64>() / 5.0;
    eprintln!("pass@1 {before:.3} -> {after:.3}, reward {early:.3} -> {late:.3}");
    // A uniform random mover rarely finds right-right-right within 6 moves.
    assert!(before < 0.3, "untrained pass@1 {before}");
    assert!(after > 0.9, "trained pass@1 {after}");
    assert!(late > early + 2.0, "reward {early} -> {late}");
}

#[test]
fn a_kl_penalty_without_a_reference_model_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let level = tmp.path().join("level.txt");
    std::fs::write(&level, LEVEL).unwrap();
    let mut cfg = config(&level, 1);
    cfg.algorithm.loss.kl_coef = 0.1;
    cfg.eval.at_start = false;
    let mut t = Trainer::new(
        cfg.clone(),
        build_policy(&cfg).unwrap(),
        env_factory(&cfg),
        &tmp.path().join("run"),
        false,
    )
    .unwrap();
    let e = t.run().unwrap_err().to_string();
    assert!(e.contains("kl_coef") && e.contains("reference"), "{e}");
}
