//! Shared setup of the integration tests: bandit configs for the tabular policy.

use quester_train::TrainConfig;

pub mod room;

/// The tests' LaMer run on the 4-armed bandit with the tabular policy
/// (`tests/fixtures/tabular_lamer_bandit.toml`, shared with quester-serve's and
/// quester-report's tests) with `traj_gamma` and `steps`.
pub fn lamer_bandit(traj_gamma: f64, steps: usize) -> TrainConfig {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tabular_lamer_bandit.toml");
    TrainConfig::load(
        &path,
        &[
            format!("algorithm.advantage.traj_gamma={traj_gamma}"),
            format!("training.steps={steps}"),
        ],
    )
    .unwrap()
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
