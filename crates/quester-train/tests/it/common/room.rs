//! The one small Sokoban room of the exploration tests (SGE, EMPO2 against GRPO with the
//! tabular policy), and running a config on it through the trainer.

use quester_train::api::{build_policy, env_factory};
use quester_train::trainer::Trainer;
use quester_train::TrainConfig;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// A 7 x 9 room with one box two cells left of its target.
pub const LEVEL: &str = "
# # # # # # # # #
# _ _ _ _ _ _ _ #
# _ _ _ _ _ _ _ #
# P _ X _ O _ _ #
# _ _ _ _ _ _ _ #
# _ _ _ _ _ _ _ #
# # # # # # # # #
";

/// Writes [`LEVEL`] into `dir` and returns its path.
pub fn level_file(dir: &Path) -> PathBuf {
    let p = dir.join("room.txt");
    std::fs::write(&p, LEVEL).unwrap();
    p
}

/// The metrics rows of a run directory.
pub fn rows(dir: &Path) -> Vec<Map<String, Value>> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Trains `cfg` into `dir` and returns its metrics rows.
pub fn train(cfg: &TrainConfig, dir: &Path) -> Vec<Map<String, Value>> {
    let mut t = Trainer::new(
        cfg.clone(),
        build_policy(cfg).unwrap(),
        env_factory(cfg),
        dir,
        false,
    )
    .unwrap();
    t.run().unwrap();
    rows(dir)
}

/// A number of the last row.
pub fn last_f64(rows: &[Map<String, Value>], key: &str) -> f64 {
    rows.last().unwrap()[key].as_f64().unwrap()
}
