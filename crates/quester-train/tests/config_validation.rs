//! Configs that cannot mean what they say are refused, naming the key: evaluation on training
//! tasks, reflections trained but never shown or shown but never written, impossible clips, a
//! method preset contradicted by another key, and renamed keys.

use quester_train::TrainConfig;
use std::path::Path;

fn preset(name: &str, overrides: &[&str]) -> Result<TrainConfig, String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../configs")
        .join(name);
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    TrainConfig::load(&p, &o).map_err(|e| e.to_string())
}

fn refused(name: &str, overrides: &[&str], needle: &str) {
    let e = preset(name, overrides).expect_err("must be refused");
    assert!(e.contains(needle), "`{needle}` not in: {e}");
}

#[test]
fn evaluation_must_use_held_out_tasks() {
    // WebShop: every preset evaluates on the test split.
    for p in ["lamer_webshop_cpu.toml", "gigpo_webshop_paper.toml"] {
        let c = preset(p, &[]).unwrap();
        assert_eq!(c.eval.env_settings["split"].as_str(), Some("test"), "{p}");
    }
    refused(
        "lamer_webshop_cpu.toml",
        &["eval.env_settings.split=\"train\""],
        "eval.env_settings.split",
    );
    refused(
        "lamer_webshop_cpu.toml",
        &["eval.env_settings.split=\"all\""],
        "eval.env_settings.split",
    );
    // Seed envs: evaluation seeds may not overlap training's.
    refused(
        "lamer_sokoban_cpu.toml",
        &["env.eval_seed_base=5"],
        "env.eval_seed_base",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["env.train_seed_base=999999995"],
        "env.eval_seed_base",
    );
    assert!(preset("lamer_sokoban_cpu.toml", &["env.eval_seed_base=10"]).is_ok());
}

#[test]
fn reflections_must_be_written_and_shown() {
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.reflection_type=\"history_only\""],
        "algorithm.do_reflection",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.do_reflection=false"],
        "algorithm.reflection_type",
    );
    assert!(preset(
        "lamer_sokoban_cpu.toml",
        &[
            "algorithm.do_reflection=false",
            "algorithm.reflection_type=\"history_only\""
        ]
    )
    .is_ok());
}

#[test]
fn clips_and_knobs() {
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.clip_low=1.0"],
        "algorithm.clip_low",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.dual_clip=0.5"],
        "algorithm.dual_clip",
    );
    // Dual clip off, the LR schedule, AdamW betas, aggregation and masking are reachable.
    let c = preset(
        "lamer_sokoban_cpu.toml",
        &[
            "algorithm.dual_clip=0",
            "training.lr_schedule.kind=\"cosine\"",
            "training.lr_schedule.total_steps=100",
            "training.adam_beta2=0.99",
            "algorithm.aggregation=\"seq_mean_token_mean\"",
            "algorithm.min_behaviour_logp=-5.0",
        ],
    )
    .unwrap();
    assert_eq!(c.algorithm.dual_clip, 0.0);
    assert_eq!(c.training.adam_beta2, 0.99);
    refused(
        "lamer_sokoban_cpu.toml",
        &["training.lr_schedule.kind=\"cosine\""],
        "training.lr_schedule",
    );
}

#[test]
fn a_method_preset_is_checked_against_the_other_keys() {
    // A GRPO run can no longer train GiGPO.
    refused(
        "grpo_sokoban_cpu.toml",
        &["algorithm.estimator=\"gigpo\""],
        "algorithm.estimator",
    );
    refused(
        "gigpo_sokoban_cpu.toml",
        &["algorithm.method=\"rloo\"", "algorithm.estimator=\"gigpo\""],
        "algorithm.estimator",
    );
    refused(
        "gigpo_sokoban_cpu.toml",
        &["algorithm.num_attempts=3"],
        "algorithm.num_attempts",
    );
    // Without an explicit estimator, the method's own is used.
    let c = preset("gigpo_sokoban_cpu.toml", &[]).unwrap();
    assert_eq!(c.algorithm.estimator, None);
    let a = quester_train::scoring::advantage_config(&c.algorithm);
    assert_eq!(a.estimator, quester_algos::Estimator::Gigpo);
    let c = preset("grpo_sokoban_cpu.toml", &[]).unwrap();
    let a = quester_train::scoring::advantage_config(&c.algorithm);
    assert_eq!(a.estimator, quester_algos::Estimator::Grpo);
}

#[test]
fn renamed_keys_say_what_to_write() {
    refused(
        "lamer_sokoban_cpu.toml",
        &["rollout.stop=[\"</action>\"]"],
        "rollout.play_stop",
    );
}

#[test]
fn herl_keys_are_checked() {
    assert!(preset("herl_instruction_cpu.toml", &[]).is_ok());
    assert!(preset("herl_instruction_paper.toml", &[]).is_ok());
    refused(
        "herl_instruction_cpu.toml",
        &["algorithm.num_attempts=3"],
        "algorithm.num_attempts",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["algorithm.estimator=\"gigpo\""],
        "algorithm.estimator",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["herl.hindsight_gamma=0"],
        "herl.hindsight_gamma",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["herl.max_candidates=0"],
        "herl.max_candidates",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["herl.alpha=-1"],
        "herl.alpha",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["herl.template=\"no placeholders\""],
        "herl.template",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["herl.train_under=\"elsewhere\""],
        "original",
    );
    // Held out: instruction evaluation draws constraint combinations never trained on.
    refused(
        "grpo_instruction_cpu.toml",
        &["eval.env_settings.split=\"train\""],
        "eval.env_settings.split",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["env.settings.split=\"all\""],
        "eval.env_settings.split",
    );
}

#[test]
fn pass_k_needs_enough_samples_per_task() {
    // Defaults: one sample per task, the curve up to it.
    let c = preset("lamer_sokoban_cpu.toml", &[]).unwrap();
    assert_eq!((c.eval.samples_per_task, c.eval.pass_k_max), (1, 0));
    assert_eq!(c.eval.pass_ks(), vec![1]);
    refused(
        "lamer_sokoban_cpu.toml",
        &["eval.samples_per_task=0"],
        "eval.samples_per_task",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["eval.samples_per_task=4", "eval.pass_k_max=8"],
        "eval.pass_k_max",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["eval.pass_k_max=2"],
        "eval.samples_per_task = 1",
    );
    let c = preset(
        "lamer_sokoban_cpu.toml",
        &["eval.samples_per_task=8", "eval.pass_k_max=8"],
    )
    .unwrap();
    assert_eq!(c.eval.pass_ks(), vec![1, 2, 4, 8]);
    let c = preset("lamer_sokoban_cpu.toml", &["eval.samples_per_task=6"]).unwrap();
    assert_eq!(c.eval.pass_ks(), vec![1, 2, 4, 6]);
    let c = preset(
        "lamer_sokoban_cpu.toml",
        &["eval.samples_per_task=8", "eval.pass_k_max=4"],
    )
    .unwrap();
    assert_eq!(c.eval.pass_ks(), vec![1, 2, 4]);
}
