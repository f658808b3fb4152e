//! The bandit run the tests share with quester-train's: the tabular policy on the 4-armed
//! bandit.

use quester_train::TrainConfig;

/// The tests' LaMer run on the 4-armed bandit with the tabular policy
/// (`crates/quester-train/tests/fixtures/tabular_lamer_bandit.toml`, shared with
/// quester-train's tests) with `traj_gamma` and `steps`.
pub fn lamer_bandit(traj_gamma: f64, steps: usize) -> TrainConfig {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../quester-train/tests/fixtures/tabular_lamer_bandit.toml");
    TrainConfig::load(
        &path,
        &[
            format!("algorithm.advantage.traj_gamma={traj_gamma}"),
            format!("training.steps={steps}"),
        ],
    )
    .unwrap()
}
