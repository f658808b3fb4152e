//! Every preset in configs/ parses into a valid TrainConfig; bad keys are named; presets layered
//! with `extends` (configs/base/) resolve as their bases with their own keys merged over them.

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
        if name.starts_with("sft_") {
            // A warm start: its demonstrations and its evaluation's single episodes.
            let env = name
                .trim_start_matches("sft_")
                .trim_end_matches("_cpu.toml");
            assert_eq!(cfg.sft.data, format!("data/demos/{env}.jsonl"), "{name}");
            assert!(quester_envs::spec(env).unwrap().expert.is_some(), "{name}");
        }
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
        n, 63,
        "lamer/gigpo/grpo x sokoban/minesweeper/bandit/webshop x cpu/paper, \
         mage/lamer/gigpo x kuhn/tictactoe x cpu/paper, herl/grpo x instruction x cpu/paper, sge x sokoban/minesweeper x cpu/paper, sge/grpo x coding x cpu/paper, empo2 x scienceworld/webshop/minesweeper x cpu/paper, grpo x scienceworld x cpu/paper, \
         sft x sokoban/minesweeper/tictactoe/kuhn/webshop/scienceworld/coding x cpu"
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

fn configs() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

#[test]
fn a_layered_preset_is_its_base_with_its_own_keys_over_it() {
    // The presets extend configs/base/ (common -> cpu|paper -> <env>_<size>): what a preset
    // resolves to is its base's resolved table with the preset's own keys merged over it.
    let preset = configs().join("grpo_sokoban_cpu.toml");
    let mut own = quester_config::read_table_raw(&preset).unwrap();
    let base = own
        .remove(quester_config::EXTENDS_KEY)
        .and_then(|v| v.as_str().map(str::to_string))
        .expect("the preset extends a base");
    let mut want = quester_config::read_table(&configs().join(&base)).unwrap();
    quester_config::merge_into(&mut want, own);
    let got = quester_config::read_table(&preset).unwrap();
    assert_eq!(got, want);
    assert!(!got.contains_key(quester_config::EXTENDS_KEY));
    // A key from the base, one from the preset, one from the bottom of the chain.
    assert_eq!(got["env"]["name"].as_str(), Some("sokoban"));
    assert_eq!(got["algorithm"]["method"].as_str(), Some("grpo"));
    assert_eq!(got["model"]["kind"].as_str(), Some("native"));

    // --set wins over a key the preset takes from a base.
    let cfg = TrainConfig::load(&preset, &["rollout.group_size=3".into()]).unwrap();
    assert_eq!(cfg.rollout.group_size, 3);
}

#[test]
fn every_base_is_marked_and_used_by_a_preset() {
    // Bases are not presets: they live in configs/base/ (which the preset loops above skip),
    // say so on their first line, and each one is reached from some preset.
    let mut used = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(configs()).unwrap() {
        let mut p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        while let Some(base) = quester_config::read_table_raw(&p)
            .unwrap()
            .get(quester_config::EXTENDS_KEY)
            .and_then(|v| v.as_str().map(str::to_string))
        {
            p = p.parent().unwrap().join(base).canonicalize().unwrap();
            used.insert(p.clone());
        }
    }
    let mut bases = 0;
    for e in std::fs::read_dir(configs().join("base")).unwrap() {
        let p = e.unwrap().path().canonicalize().unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.starts_with("# Base, not a preset"),
            "{}: say on the first line that it is a base",
            p.display()
        );
        assert!(used.contains(&p), "{}: no preset extends it", p.display());
        quester_config::read_table(&p).unwrap_or_else(|e| panic!("{e}"));
        bases += 1;
    }
    assert_eq!(bases, used.len());
}

#[test]
fn a_bad_extends_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("a.toml", "extends = \"b.toml\"\n");
    write("b.toml", "extends = \"a.toml\"\n");
    write("missing.toml", "extends = \"base/none.toml\"\n");
    let load = |name: &str| {
        TrainConfig::load(&dir.path().join(name), &[])
            .unwrap_err()
            .to_string()
    };
    let e = load("a.toml");
    assert!(
        e.contains("cycle") && e.contains("a.toml -> ") && e.contains("b.toml -> "),
        "{e}"
    );
    let e = load("missing.toml");
    assert!(
        e.contains("missing.toml extends ") && e.contains("base/none.toml"),
        "{e}"
    );
}
