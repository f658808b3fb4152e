//! Shared setup of the integration tests: bandit configs for the tabular policy.

use quester_train::TrainConfig;

pub mod room;

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

/// The GRPO baseline with the same episode budget: single attempts, twice the group, episode
/// score normalised by mean and std; evaluated with 2 independent attempts.
pub fn grpo_bandit(steps: usize) -> TrainConfig {
    let mut c = lamer_bandit(0.0, steps);
    c.algorithm.method = "grpo".into();
    c.algorithm.num_attempts = 1;
    c.algorithm.reflection_type = quester_train::config::ReflectionType::None;
    c.algorithm.advantage.estimator = quester_algos::Estimator::Grpo;
    c.algorithm.advantage.signal = quester_algos::Signal::EpisodeScore;
    c.algorithm.advantage.normalization = quester_algos::Normalization::MeanStdNorm;
    c.rollout.group_size = 16;
    c
}

/// A fresh temporary run directory path (not created).
pub fn run_dir(tmp: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    tmp.path().join(name)
}
