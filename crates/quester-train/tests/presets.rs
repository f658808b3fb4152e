//! Every preset in configs/ parses into a valid TrainConfig; bad keys are named.

use quester_train::TrainConfig;
use std::path::Path;

#[test]
fn every_preset_parses_and_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".toml") {
            continue;
        }
        let cfg = TrainConfig::load(&p, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        if name.starts_with("lamer") || name.starts_with("mage") {
            assert_eq!(cfg.algorithm.num_attempts, 3, "{name}");
        } else {
            assert_eq!(cfg.algorithm.num_attempts, 1, "{name}");
        }
        if name.contains("_instruction_") || name.contains("_coding_") {
            // One answer per request (instruction), or several submissions inside one attempt
            // with pass@k over samples per task (coding).
            assert_eq!(cfg.eval.num_attempts, 1, "{name}");
        } else {
            assert_eq!(cfg.eval.num_attempts, 3, "{name}");
        }
        n += 1;
    }
    assert_eq!(
        n, 56,
        "lamer/gigpo/grpo x sokoban/minesweeper/bandit/webshop x cpu/paper, \
         mage/lamer/gigpo x kuhn/tictactoe x cpu/paper, herl/grpo x instruction x cpu/paper, sge x sokoban/minesweeper x cpu/paper, sge/grpo x coding x cpu/paper, empo2 x scienceworld/webshop/minesweeper x cpu/paper, grpo x scienceworld x cpu/paper"
    );
}

#[test]
fn overrides_apply_and_unknown_keys_list_valid_ones() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/lamer_sokoban_cpu.toml");
    let cfg = TrainConfig::load(&p, &["algorithm.advantage.traj_gamma=0.6".into()]).unwrap();
    assert_eq!(cfg.algorithm.advantage.traj_gamma, 0.6);
    let e = TrainConfig::load(&p, &["algorithm.advantage.traj_gama=0.6".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("traj_gama") && e.contains("traj_gamma"), "{e}");
    let e = TrainConfig::load(&p, &["algorithm.method=ppo".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("lamer") && e.contains("grpo"), "{e}");
    let e = TrainConfig::load(&p, &["algorithm.advantage.traj_gamma=1.5".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("algorithm.advantage.traj_gamma"), "{e}");
    // An old-style override names the new key too.
    let e = TrainConfig::load(&p, &["algorithm.traj_gamma=1.5".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("algorithm.advantage.traj_gamma"), "{e}");
}
