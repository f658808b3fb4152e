//! The config's layout: the presets use only the new (nested) keys; files of the older flat
//! layout (kept under tests/fixtures/old_layout/: presets as they were, and the
//! config.resolved.toml their runs wrote) load to exactly the same config as today's presets;
//! an older run directory's resolved config is accepted on resume; a missing key gives the
//! sections' defaults; and the rename list is the same in the loader, the rewrite script and
//! the docs.

use quester_train::config::migrate::{self, RENAMES};
use quester_train::config::{TrainConfig, TrainMode};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tomls(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    out.sort();
    out
}

#[test]
fn every_preset_uses_only_the_new_keys() {
    let mut old = Vec::new();
    let presets = tomls(&root().join("configs"));
    assert!(presets.len() >= 56);
    for p in &presets {
        let mut t = quester_config::read_table(p).unwrap();
        let renamed = migrate::rename_table(&mut t).unwrap();
        for r in renamed {
            old.push(format!("{}: {} (now {})", p.display(), r.old, r.new));
        }
    }
    assert!(
        old.is_empty(),
        "presets with old keys (rewrite them with scripts/migrate_config.py):\n{}",
        old.join("\n")
    );
}

#[test]
fn old_layout_files_load_as_todays_presets() {
    let fixtures = tomls(&root().join("crates/quester-train/tests/fixtures/old_layout"));
    assert!(fixtures.len() >= 8);
    for f in &fixtures {
        let name = f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".resolved", "");
        let mut t = quester_config::read_table(f).unwrap();
        assert!(
            !migrate::rename_table(&mut t).unwrap().is_empty(),
            "{}: not an old-layout file",
            f.display()
        );
        let old = TrainConfig::load(f, &[]).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let new = TrainConfig::load(&root().join("configs").join(&name), &[]).unwrap();
        assert_eq!(old, new, "{}", f.display());
    }
}

#[test]
fn an_old_run_directorys_config_resumes() {
    // What resume compares: the run's saved config.resolved.toml against the config it loads.
    let dir = root().join("crates/quester-train/tests/fixtures/old_layout");
    for name in [
        "lamer_sokoban_cpu",
        "herl_instruction_paper",
        "mage_tictactoe_cpu",
    ] {
        let path = dir.join(format!("{name}.resolved.toml"));
        let saved = std::fs::read_to_string(&path).unwrap();
        let cfg = TrainConfig::load(&path, &[]).unwrap();
        assert!(cfg.matches_saved(&saved).unwrap(), "{name}");
        assert!(cfg.matches_saved(&cfg.to_toml().unwrap()).unwrap());
        let mut other = cfg.clone();
        other.algorithm.loss.clip_high = 0.25;
        assert!(!other.matches_saved(&saved).unwrap(), "{name}");
    }
    // The old keys' values arrive where they belong.
    let cfg = TrainConfig::load(&dir.join("lamer_sokoban_cpu.resolved.toml"), &[]).unwrap();
    assert_eq!(cfg.model.train, TrainMode::Lora);
    assert_eq!((cfg.model.lora.rank, cfg.model.lora.alpha), (8, 16.0));
    assert_eq!(cfg.model.lora.seed, cfg.training.seed);
    assert_eq!(cfg.prompt.play_template, "sokoban_terse_play");
    assert_eq!(cfg.prompt.play_stop, vec!["</action>".to_string()]);
    assert_eq!(cfg.prompt.history_window, 2);
    assert_eq!(cfg.training.optimizer.lr, 0.001);
    assert_eq!(
        cfg.algorithm.advantage.return_form,
        quester_algos::CrossAttemptReturn::Paper
    );
    let cfg = TrainConfig::load(&dir.join("herl_instruction_paper.resolved.toml"), &[]).unwrap();
    assert_eq!(cfg.model.train, TrainMode::Full);
    assert_eq!(cfg.algorithm.loss.hindsight_gamma, 1.0);
    assert_eq!(
        cfg.algorithm.advantage.signal,
        quester_algos::Signal::EpisodeScore
    );
    let cfg = TrainConfig::load(&dir.join("mage_tictactoe_cpu.resolved.toml"), &[]).unwrap();
    assert!(cfg.algorithm.advantage.differential_rewards);
}

#[test]
fn an_override_wins_in_either_layout() {
    let old = root().join("crates/quester-train/tests/fixtures/old_layout/lamer_sokoban_cpu.toml");
    let new = root().join("configs/lamer_sokoban_cpu.toml");
    for file in [&old, &new] {
        for set in ["algorithm.clip_low=0.1", "algorithm.loss.clip_low=0.1"] {
            let c = TrainConfig::load(file, &[set.to_string()]).unwrap();
            assert_eq!(c.algorithm.loss.clip_low, 0.1, "{} {set}", file.display());
        }
        for set in ["model.lora=false", "model.train=\"full\""] {
            let c = TrainConfig::load(file, &[set.to_string()]).unwrap();
            assert_eq!(c.model.train, TrainMode::Full, "{} {set}", file.display());
            assert_eq!(c.model.lora.rank, 8, "the preset's [model.lora] is kept");
        }
        let c = TrainConfig::load(file, &["algorithm.cross_attempt=reference".into()]).unwrap();
        assert_eq!(
            c.algorithm.advantage.return_form,
            quester_algos::CrossAttemptReturn::ReferenceRecursion
        );
    }
}

#[test]
fn a_missing_key_gives_the_sections_defaults() {
    // Today's defaults (the flat sections' Default impls before the libraries' structs were
    // nested), whole and key by key.
    let d = TrainConfig::default();
    assert_eq!(TrainConfig::from_table(toml::Table::new()).unwrap(), d);
    let a = &d.algorithm.advantage;
    assert_eq!(a.estimator, quester_algos::Estimator::Gigpo);
    assert_eq!(a.normalization, quester_algos::Normalization::MeanNorm);
    assert_eq!(
        (a.step_weight, a.epsilon, a.invalid_penalty),
        (1.0, 1e-6, 0.5)
    );
    assert_eq!((a.step_gamma, a.traj_gamma), (0.95, 0.9));
    assert_eq!(a.return_form, quester_algos::CrossAttemptReturn::Paper);
    assert_eq!(a.signal, quester_algos::Signal::Return);
    assert_eq!((a.differential_rewards, a.anchor_similarity), (false, 1.0));
    let l = &d.algorithm.loss;
    assert_eq!(
        (
            l.clip_low,
            l.clip_high,
            l.dual_clip,
            l.entropy_coef,
            l.kl_coef
        ),
        (0.2, 0.2, 3.0, 0.001, 0.0)
    );
    assert_eq!(l.aggregation, quester_algos::Aggregation::TokenMean);
    assert_eq!(l.kl_estimator, quester_algos::KlEstimator::K3);
    assert_eq!((l.min_behaviour_logp, l.hindsight_gamma), (None, 1.0));
    let o = &d.training.optimizer;
    assert_eq!(
        (o.lr, o.beta1, o.beta2, o.eps, o.weight_decay),
        (1e-6, 0.9, 0.999, 1e-8, 0.01)
    );
    let m = &d.model;
    assert_eq!(m.train, TrainMode::Lora);
    assert_eq!((m.lora.rank, m.lora.alpha, m.lora.seed), (16, 32.0, 0));
    assert_eq!(
        m.lora.target_modules,
        [
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "gate_proj",
            "up_proj",
            "down_proj"
        ]
    );
    let p = &d.prompt;
    assert_eq!(
        (
            p.history_window,
            p.full_observations,
            p.max_reflection_chars
        ),
        (7, 2, 2000)
    );
    assert_eq!(
        (p.play_stop.as_slice(), p.reflect_stop.as_slice()),
        (
            &["</action>".to_string()][..],
            &["</remark>".to_string()][..]
        )
    );
    assert!(p.play_template.is_empty() && p.play_prefix.is_empty());

    // A partial table takes the rest from the same defaults (the library's own, which serde
    // uses for a table that is present).
    let t: toml::Table = "[algorithm.advantage]\nstep_weight = 0.5\n[algorithm.loss]\n\
                          clip_high = 0.3\n[training.optimizer]\nlr = 0.1\n[model.lora]\nrank = 4\n"
        .parse()
        .unwrap();
    let c = TrainConfig::from_table(t).unwrap();
    let mut want = d.clone();
    want.algorithm.advantage.step_weight = 0.5;
    want.algorithm.loss.clip_high = 0.3;
    want.training.optimizer.lr = 0.1;
    want.model.lora.rank = 4;
    assert_eq!(c, want);

    // The method decides the estimator (and MAGE its differential rewards) when unset.
    for (method, estimator) in [
        ("lamer", "gigpo"),
        ("gigpo", "gigpo"),
        ("grpo", "grpo"),
        ("rloo", "rloo"),
        ("mage", "gigpo"),
        ("herl", "grpo"),
        ("sge", "grpo"),
        ("empo2", "grpo"),
    ] {
        let t: toml::Table = format!("[algorithm]\nmethod = \"{method}\"\n")
            .parse()
            .unwrap();
        let c = TrainConfig::parse_table(t).unwrap();
        let got = toml::Value::try_from(c.algorithm.advantage.estimator).unwrap();
        assert_eq!(got.as_str(), Some(estimator), "{method}");
        assert_eq!(c.algorithm.advantage.differential_rewards, method == "mage");
    }
}

#[test]
fn the_rename_list_is_the_same_in_the_script_and_the_docs() {
    let script = std::fs::read_to_string(root().join("scripts/migrate_config.py")).unwrap();
    let docs = std::fs::read_to_string(root().join("docs/training.md")).unwrap();
    let in_script: Vec<(String, String)> = script
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("(\"")?;
            let (old, rest) = l.split_once("\", \"")?;
            let (new, _) = rest.split_once('"')?;
            Some((old.to_string(), new.to_string()))
        })
        .collect();
    let in_rust: Vec<(String, String)> = RENAMES
        .iter()
        .map(|r| (r.old.to_string(), r.new.to_string()))
        .collect();
    assert_eq!(in_script, in_rust, "scripts/migrate_config.py");
    for r in RENAMES {
        let line = format!("`{}` -> `{}`", r.old, r.new);
        assert!(docs.contains(&line), "docs/training.md lacks {line}");
    }
}
