//! The bandit run the tests share with quester-train's: the tabular policy on the 4-armed
//! bandit (a copy of the part of `crates/quester-train/tests/common` these tests use).

use quester_train::TrainConfig;

/// Every bandit action as a candidate response of the tabular policy.
pub const BANDIT_CANDIDATES: &[&str] = &[
    "<action>1</action>",
    "<action>2</action>",
    "<action>3</action>",
    "<action>4</action>",
    "<action>scout</action>",
];

/// A LaMer run on the 4-armed bandit with the tabular policy (Adam, lr 0.1). Two attempts, memory of the
/// previous attempt's trajectory (the tabular policy cannot write useful reflections).
pub fn lamer_bandit(traj_gamma: f64, steps: usize) -> TrainConfig {
    let cands: Vec<String> = BANDIT_CANDIDATES
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect();
    let text = format!(
        r#"
[model]
kind = "tabular"
tabular_candidates = [{cands}]
[env]
name = "bandit"
[algorithm]
method = "lamer"
num_attempts = 2
do_reflection = false
reflection_type = "history_only"
[algorithm.advantage]
traj_gamma = {traj_gamma}
[rollout]
tasks_per_step = 16
group_size = 8
[training]
steps = {steps}
grad_clip = 0.0
mini_batch = 64
seed = 7
checkpoint_every = 0
[training.optimizer]
lr = 0.1
[eval]
every = 0
at_end = true
tasks = 200
num_attempts = 2
temperature = 1.0
top_p = 1.0
top_k = 0
[output]
progress = false
trajectories_per_step = 1
"#,
        cands = cands.join(", ")
    );
    TrainConfig::from_table(text.parse().unwrap()).unwrap()
}
