//! `quester memory` on a real (tabular-policy) EMPO2 run trained by the binary itself.

use crate::common::{fails, ok, quester};

const CONFIG: &str = r#"
[model]
kind = "tabular"
tabular_candidates = ["<action>1</action>", "<action>2</action>", "<action>scout</action>"]
[env]
name = "bandit"
train_pool = 2
[algorithm]
method = "empo2"
num_attempts = 1
do_reflection = false
reflection_type = "none"
[algorithm.advantage]
signal = "trial_score"
normalization = "mean_std_norm"
[rollout]
tasks_per_step = 2
group_size = 3
[training]
steps = 2
checkpoint_every = 1
[training.optimizer]
lr = 0.1
[eval]
every = 0
at_end = false
[output]
progress = false
[empo2]
off_policy_below = 0.0
with_tips_below = 1.0
"#;

#[test]
fn memory_lists_an_empo2_runs_tips_and_refuses_other_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("empo2.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let run = dir.path().join("run");
    let (cfg_s, run_s) = (cfg.to_str().unwrap(), run.to_str().unwrap());
    ok(quester(&[
        "train",
        "--config",
        cfg_s,
        "--run-dir",
        run_s,
        "--no-report",
    ]));

    let out = ok(quester(&["memory", run_s, "--top", "2"]));
    assert!(out.contains("2 task(s)"), "{out}");
    assert!(
        out.contains("; at that timestep the action taken was "),
        "{out}"
    );
    assert!(out.contains("[score "), "{out}");

    let json = ok(quester(&["memory", run_s, "--json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let tasks = v.as_object().unwrap();
    assert_eq!(tasks.len(), 2);
    let (seed, task) = tasks.iter().next().unwrap();
    assert_eq!(task["entries"][0]["key"].as_array().unwrap().len(), 384);

    let one = ok(quester(&["memory", run_s, "--task", seed]));
    assert!(
        one.contains("1 task(s)") && one.contains(&format!("task {seed}:")),
        "{one}"
    );
    let err = fails(quester(&["memory", run_s, "--task", "123456789"]));
    assert!(err.contains("task 123456789 has no memory"), "{err}");

    // A run of another method has no memory to show.
    let grpo = dir.path().join("grpo.toml");
    std::fs::write(
        &grpo,
        CONFIG
            .replace("method = \"empo2\"", "method = \"grpo\"")
            .replace(
                "[empo2]\noff_policy_below = 0.0\nwith_tips_below = 1.0\n",
                "",
            ),
    )
    .unwrap();
    let grpo_run = dir.path().join("grpo-run");
    ok(quester(&[
        "train",
        "--config",
        grpo.to_str().unwrap(),
        "--run-dir",
        grpo_run.to_str().unwrap(),
        "--no-report",
    ]));
    let err = fails(quester(&["memory", grpo_run.to_str().unwrap()]));
    assert!(err.contains("only EMPO2 runs have one"), "{err}");
}
