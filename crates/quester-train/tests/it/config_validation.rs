//! Configs that cannot mean what they say are refused, naming the key: evaluation on training
//! tasks, reflections trained but never shown or shown but never written, impossible clips, a
//! method preset contradicted by another key, and renamed keys.

use quester_train::TrainConfig;
use std::path::Path;

fn preset(name: &str, overrides: &[&str]) -> Result<TrainConfig, String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../configs")
        .join(name);
    let o: Vec<String> = overrides
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
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
        &["algorithm.loss.clip_low=1.0"],
        "algorithm.loss.clip_low: must be in [0, 1)",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.loss.dual_clip=0.5"],
        "algorithm.loss.dual_clip",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.loss.tis_cap=0.5"],
        "algorithm.loss.tis_cap = 0.5: must be a finite number >= 1",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.loss.rollout_correction=\"is\""],
        "algorithm.loss.rollout_correction: unknown variant `is`, expected `none` or `tis`",
    );
    // An old flat key with a bad value names the new key.
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.clip_low=1.0"],
        "algorithm.loss.clip_low: must be in [0, 1)",
    );
    // The libraries' own checks, under their tables.
    refused(
        "lamer_sokoban_cpu.toml",
        &["algorithm.advantage.anchor_similarity=0"],
        "algorithm.advantage.anchor_similarity",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["training.optimizer.beta1=1.0"],
        "training.optimizer.beta1",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["training.optimizer.eps=0"],
        "training.optimizer.eps",
    );
    refused(
        "lamer_sokoban_cpu.toml",
        &["model.lora.rank=0"],
        "model.lora.rank",
    );
    // Dual clip off, the LR schedule, every AdamW and LoRA knob, aggregation, masking and the
    // advantage knobs that had no key before are reachable.
    let c = preset(
        "lamer_sokoban_cpu.toml",
        &[
            "algorithm.loss.dual_clip=0",
            "training.lr_schedule.kind=\"cosine\"",
            "training.lr_schedule.total_steps=100",
            "training.optimizer.beta2=0.99",
            "training.optimizer.eps=1e-6",
            "algorithm.loss.aggregation=\"seq_mean_token_mean\"",
            "algorithm.loss.min_behaviour_logp=-5.0",
            "algorithm.advantage.epsilon=1e-4",
            "algorithm.advantage.anchor_similarity=0.9",
            "model.lora.seed=7",
        ],
    )
    .unwrap();
    assert_eq!(c.algorithm.loss.dual_clip, 0.0);
    assert_eq!(c.training.optimizer.beta2, 0.99);
    assert_eq!(c.training.optimizer.eps, 1e-6);
    assert_eq!(c.algorithm.advantage.epsilon, 1e-4);
    assert_eq!(c.algorithm.advantage.anchor_similarity, 0.9);
    assert_eq!(c.model.lora.seed, 7);
    // Unset, the adapters' seed is the run's.
    let c = preset("lamer_sokoban_cpu.toml", &["training.seed=5"]).unwrap();
    assert_eq!(c.model.lora.seed, 5);
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
        &["algorithm.advantage.estimator=\"gigpo\""],
        "algorithm.advantage.estimator",
    );
    refused(
        "gigpo_sokoban_cpu.toml",
        &[
            "algorithm.method=\"rloo\"",
            "algorithm.advantage.estimator=\"gigpo\"",
        ],
        "algorithm.advantage.estimator",
    );
    refused(
        "grpo_sokoban_cpu.toml",
        &["algorithm.estimator=\"gigpo\""],
        "algorithm.advantage.estimator",
    );
    refused(
        "gigpo_sokoban_cpu.toml",
        &["algorithm.num_attempts=3"],
        "algorithm.num_attempts",
    );
    // Without an explicit estimator, the method's own is filled in (and shown in the resolved
    // config); LaMer accepts another one (an ablation).
    let c = preset("gigpo_sokoban_cpu.toml", &[]).unwrap();
    assert_eq!(
        c.algorithm.advantage.estimator,
        quester_algos::Estimator::Gigpo
    );
    let c = preset("grpo_sokoban_cpu.toml", &[]).unwrap();
    assert_eq!(
        c.algorithm.advantage.estimator,
        quester_algos::Estimator::Grpo
    );
    assert!(c.to_toml().unwrap().contains("estimator = \"grpo\""));
    let c = preset("lamer_sokoban_cpu.toml", &["algorithm.method=\"lamer\""]).unwrap();
    assert_eq!(
        c.algorithm.advantage.estimator,
        quester_algos::Estimator::Gigpo
    );
    let c = preset(
        "lamer_sokoban_cpu.toml",
        &["algorithm.advantage.estimator=\"grpo\""],
    )
    .unwrap();
    assert_eq!(
        c.algorithm.advantage.estimator,
        quester_algos::Estimator::Grpo
    );
    // MAGE's differential rewards are its default, and it refuses to go without them.
    let c = preset("mage_kuhn_cpu.toml", &[]).unwrap();
    assert!(c.algorithm.advantage.differential_rewards);
    refused(
        "mage_kuhn_cpu.toml",
        &["algorithm.advantage.differential_rewards=false"],
        "algorithm.advantage.differential_rewards",
    );
    let c = preset("lamer_kuhn_cpu.toml", &[]).unwrap();
    assert!(!c.algorithm.advantage.differential_rewards);
}

#[test]
fn renamed_keys_say_what_to_write() {
    refused(
        "lamer_sokoban_cpu.toml",
        &["rollout.stop=[\"</action>\"]"],
        "prompt.play_stop",
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
        &["algorithm.advantage.estimator=\"gigpo\""],
        "algorithm.advantage.estimator",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["algorithm.loss.hindsight_gamma=0"],
        "algorithm.loss.hindsight_gamma",
    );
    refused(
        "herl_instruction_cpu.toml",
        &["herl.hindsight_gamma=0"],
        "algorithm.loss.hindsight_gamma",
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

#[test]
fn precision_takes_three_values() {
    for v in ["f32", "bf16", "auto"] {
        let c = preset(
            "grpo_bandit_cpu.toml",
            &[&format!("model.precision=\"{v}\"")],
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(c.model.precision).unwrap(),
            serde_json::Value::String(v.into())
        );
    }
    let e = preset("grpo_bandit_cpu.toml", &["model.precision=\"fp16\""]).unwrap_err();
    assert!(
        e.contains("model.precision") || e.contains("precision"),
        "{e}"
    );
    for allowed in ["f32", "bf16", "auto"] {
        assert!(e.contains(allowed), "`{allowed}` not in: {e}");
    }
}

#[test]
fn micro_batches_need_a_size_or_a_token_budget() {
    refused(
        "grpo_bandit_cpu.toml",
        &["training.micro_batch=0"],
        "training.micro_batch",
    );
    let c = preset(
        "grpo_bandit_cpu.toml",
        &["training.micro_batch=0", "training.micro_batch_tokens=4096"],
    )
    .unwrap();
    assert_eq!(c.training.micro_batch_tokens, 4096);
    // A misspelt key is refused, naming it.
    refused(
        "grpo_bandit_cpu.toml",
        &["training.micro_batch_token=4096"],
        "micro_batch_token",
    );
}

#[test]
fn rollouts_on_servers_need_servers_and_a_lora_adapter() {
    let p = "lamer_bandit_cpu.toml";
    refused(p, &["rollout.engine=\"openai\""], "rollout.servers");
    refused(
        p,
        &[
            "rollout.engine=\"openai\"",
            "rollout.servers=[\"127.0.0.1:8000/v1\"]",
        ],
        "must start with http",
    );
    refused(
        p,
        &[
            "rollout.engine=\"openai\"",
            "rollout.servers=[\"http://127.0.0.1:8000/v1\"]",
            "model.train=\"full\"",
        ],
        "rollout.engine",
    );
    refused(
        p,
        &["rollout.servers=[\"http://127.0.0.1:8000/v1\"]"],
        "rollout.servers",
    );
    refused(p, &["rollout.engine=\"vllm\""], "rollout.engine");
    let c = preset(
        p,
        &[
            "rollout.engine=\"openai\"",
            "rollout.servers=[\"http://127.0.0.1:8000/v1\"]",
        ],
    )
    .unwrap();
    // The library alone has no rollout client: it says so instead of sampling natively.
    let tmp = tempfile::tempdir().unwrap();
    let e = quester_train::train(&c, tmp.path(), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("quester train"), "{e}");
}

#[test]
fn rollouts_sampled_ahead_need_servers_tis_and_a_stateless_method() {
    let servers = [
        "rollout.engine=\"openai\"",
        "rollout.servers=[\"http://127.0.0.1:8000/v1\"]",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        servers.iter().chain(extra).copied().collect()
    };
    refused(
        "lamer_bandit_cpu.toml",
        &["rollout.max_staleness=1"],
        "rollout.max_staleness: rollouts are sampled ahead on rollout servers only",
    );
    refused(
        "lamer_bandit_cpu.toml",
        &with(&["rollout.max_staleness=1"]),
        "algorithm.loss.rollout_correction: rollout.max_staleness > 0 needs \"tis\"",
    );
    let tis = "algorithm.loss.rollout_correction=\"tis\"";
    refused(
        "sge_coding_cpu.toml",
        &with(&["rollout.max_staleness=1", tis]),
        "rollout.max_staleness = 1: method \"sge\" carries state",
    );
    refused(
        "lamer_bandit_cpu.toml",
        &with(&["rollout.max_staleness=-1", tis]),
        "rollout.max_staleness",
    );
    for p in ["lamer_bandit_cpu.toml", "grpo_bandit_cpu.toml"] {
        let c = preset(p, &with(&["rollout.max_staleness=2", tis])).unwrap();
        assert_eq!(c.rollout.max_staleness, 2);
    }
    // Absent at 0, so earlier runs' resolved configs read the same.
    let c = preset("lamer_bandit_cpu.toml", &[]).unwrap();
    assert!(!toml::to_string(&c.rollout)
        .unwrap()
        .contains("max_staleness"));
}
