//! SGE against GRPO with the tabular policy on one small Sokoban room (seconds, fixed seeds),
//! and what SGE's parts do: the share of reflected rollouts, the strategy rule, the bank
//! through a checkpoint.
//!
//! The tabular policy keeps one softmax per distinct prompt over four answers, each a strategy
//! and the move it names. It cannot read, so what strategy reflection does here is what it
//! does to any policy's inputs: half of each group plays under a prompt that lists the task's
//! failed strategies, a context the plain-task policy's collapse does not reach, so those
//! rollouts keep trying other paths. The exploration measure is the paper's: the cumulative
//! number of distinct outcomes (final boards) per task. Both methods play the same prompts
//! otherwise, at temperature 1, on a pool of one room.
//!
//! The effect needs GRPO to collapse: at lr 0.1 over 30 steps neither policy has left the
//! uniform start far enough and both find about 39 boards; at lr 0.3 over 60 steps GRPO
//! solves the room from step 17 on and stops finding new boards (mean 29.1 over 8 seeds)
//! while SGE finds 40.9, ahead in 8/8 seeds. The price is visible too: SGE's reward climbs
//! later (half of each group plays elsewhere).

use crate::common::room::{last_f64, level_file, rows, train};
use quester_train::api::{build_policy, env_factory};
use quester_train::method::sge::{Sge, SgeConfig};
use quester_train::method::{Common, TrainingMethod};
use quester_train::prompts::PromptTemplates;
use quester_train::rollout::run_trials;
use quester_train::trainer::Trainer;
use quester_train::TrainConfig;
use std::path::Path;

const SEEDS: [u64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
const STEPS: usize = 60;

fn candidates() -> String {
    ["up", "down", "left", "right"]
        .iter()
        .map(|m| format!("\"<strategy>go {m}</strategy> <action>{m}</action>\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn config(method: &str, seed: u64, level: &Path, steps: usize) -> TrainConfig {
    let text = format!(
        r#"
[model]
kind = "tabular"
tabular_candidates = [{candidates}]
[env]
name = "sokoban"
train_pool = 1
[env.settings]
level = "{level}"
max_turns = 6
max_moves_per_turn = 1
[prompt]
play_template = "sge_terse_play"
history_window = 0
[algorithm]
method = "{method}"
num_attempts = 1
do_reflection = false
reflection_type = "none"
[algorithm.advantage]
signal = "episode_score"
normalization = "mean_std_norm"
[rollout]
tasks_per_step = 1
group_size = 8
max_turns = 6
temperature = 1.0
[training]
steps = {steps}
grad_clip = 0.0
mini_batch = 512
seed = {seed}
checkpoint_every = 0
[training.optimizer]
lr = 0.3
[eval]
every = 0
at_start = false
at_end = false
tasks = 4
num_attempts = 1
temperature = 1.0
top_p = 1.0
top_k = 0
[sge]
strategy_temperature = 1.0
action_temperature = 1.0
reflection_share = 0.5
reflection = "negative"
[output]
progress = false
"#,
        candidates = candidates(),
        level = level.display()
    );
    TrainConfig::from_table(text.parse().unwrap()).unwrap()
}

#[test]
fn strategy_reflection_explores_more_distinct_outcomes_than_grpo() {
    let tmp = tempfile::tempdir().unwrap();
    let level = level_file(tmp.path());
    let mut sge = Vec::new();
    let mut grpo = Vec::new();
    for seed in SEEDS {
        let s = train(
            &config("sge", seed, &level, STEPS),
            &tmp.path().join(format!("sge{seed}")),
        );
        let g = train(
            &config("grpo", seed, &level, STEPS),
            &tmp.path().join(format!("grpo{seed}")),
        );
        sge.push(last_f64(&s, "distinct_outcomes"));
        grpo.push(last_f64(&g, "distinct_outcomes"));
        // Reflection really happened: once the bank holds failures, half of each group.
        let reflected: Vec<f64> = s
            .iter()
            .map(|r| r["sge/reflected_share"].as_f64().unwrap())
            .collect();
        assert_eq!(reflected[0], 0.0, "the bank starts empty");
        assert!(
            reflected.iter().all(|&x| x == 0.0 || x == 0.5),
            "{reflected:?}"
        );
        assert!(reflected.contains(&0.5), "{reflected:?}");
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let wins = sge.iter().zip(&grpo).filter(|(s, g)| s > g).count();
    eprintln!(
        "distinct final boards after {STEPS} steps: SGE {sge:?} (mean {:.1}), GRPO {grpo:?} \
         (mean {:.1}); SGE ahead in {wins}/8 seeds",
        mean(&sge),
        mean(&grpo)
    );
    assert!(wins >= 7, "SGE ahead in only {wins}/8 seeds");
    assert!(
        mean(&sge) >= 1.2 * mean(&grpo),
        "SGE {:.2} vs GRPO {:.2}",
        mean(&sge),
        mean(&grpo)
    );
}

#[test]
fn reflected_rollouts_are_the_last_share_of_each_group_and_see_failed_strategies() {
    let tmp = tempfile::tempdir().unwrap();
    let level = level_file(tmp.path());
    let cfg = config("sge", 3, &level, 2);
    let templates = PromptTemplates::from_config(&cfg).unwrap();
    let mut sge = Sge::new(Common {
        cfg: cfg.clone(),
        templates,
    })
    .unwrap();
    let requests = sge.train_requests(0);
    assert!(requests.iter().all(|r| r.guidance.is_empty()), "empty bank");
    let mut policy = build_policy(&cfg).unwrap();
    let factory = env_factory(&cfg);
    let trials = run_trials(
        policy.as_mut(),
        &*factory,
        &requests,
        &sge.train_spec(),
        None,
    )
    .unwrap();
    let failed_strategies: Vec<String> = trials
        .iter()
        .filter(|t| !t.attempts[0].won)
        .map(|t| {
            let r = &t.samples[0].response;
            r[r.find("go ").unwrap()..r.find("</strategy>").unwrap()].to_string()
        })
        .collect();
    assert!(!failed_strategies.is_empty(), "some random episode failed");
    sge.after_step(0, &trials);
    let requests = sge.train_requests(1);
    for r in &requests {
        if r.trial < 4 {
            assert!(r.guidance.is_empty(), "trial {} is not reflected", r.trial);
        } else {
            assert!(r.guidance.contains("FAILED"), "{}", r.guidance);
            // The three most recent failed opening strategies are listed.
            let last = failed_strategies.last().unwrap();
            assert!(r.guidance.contains(last.as_str()), "{}", r.guidance);
        }
    }
    // The guidance reaches the prompt of every turn of a reflected trial.
    let trials = run_trials(
        policy.as_mut(),
        &*factory,
        &requests,
        &sge.train_spec(),
        None,
    )
    .unwrap();
    for t in &trials {
        for s in &t.samples {
            assert_eq!(s.prompt.contains("FAILED"), t.trial >= 4, "{}", s.prompt);
        }
    }
}

#[test]
fn a_response_without_a_strategy_is_an_invalid_action_in_training_only() {
    let tmp = tempfile::tempdir().unwrap();
    let level = level_file(tmp.path());
    let mut cfg = config("sge", 1, &level, 1);
    cfg.model.tabular_candidates = vec![
        "<action>right</action>".into(),
        "<strategy> </strategy><action>right</action>".into(),
    ];
    let templates = PromptTemplates::from_config(&cfg).unwrap();
    let sge = Sge::new(Common {
        cfg: cfg.clone(),
        templates,
    })
    .unwrap();
    let mut policy = build_policy(&cfg).unwrap();
    let factory = env_factory(&cfg);
    let trials = run_trials(
        policy.as_mut(),
        &*factory,
        &sge.train_requests(0),
        &sge.train_spec(),
        None,
    )
    .unwrap();
    let play: Vec<_> = trials.iter().flat_map(|t| &t.samples).collect();
    assert!(!play.is_empty());
    assert!(play.iter().all(|s| !s.valid), "no response has a strategy");
    // Evaluation judges the action alone: the same responses are valid moves there.
    let trials = run_trials(
        policy.as_mut(),
        &*factory,
        &sge.eval_requests(),
        &sge.eval_spec(),
        None,
    )
    .unwrap();
    assert!(trials.iter().flat_map(|t| &t.samples).all(|s| s.valid));
}

#[test]
fn the_bank_survives_a_checkpoint_and_a_resumed_run_matches() {
    let tmp = tempfile::tempdir().unwrap();
    let level = level_file(tmp.path());
    let mut cfg = config("sge", 5, &level, 6);
    cfg.training.checkpoint_every = 2;
    let strip = |dir: &Path| {
        rows(dir)
            .into_iter()
            .map(|mut m| {
                m.retain(|k, _| !k.starts_with("time_"));
                m
            })
            .collect::<Vec<_>>()
    };
    let full = tmp.path().join("full");
    train(&cfg, &full);
    let cut = tmp.path().join("cut");
    let mut t = Trainer::new(
        cfg.clone(),
        build_policy(&cfg).unwrap(),
        env_factory(&cfg),
        &cut,
        false,
    )
    .unwrap();
    t.stop_after = Some(3); // checkpoint at 2, step 3 logged and lost
    t.run().unwrap();
    let state = std::fs::read_to_string(cut.join("checkpoints/step_000002/method_state.json"))
        .expect("SGE saves its bank");
    assert!(state.contains("\"bank\""), "{state}");
    assert!(cut.join("checkpoints/step_000002/outcomes.json").exists());
    quester_train::resume(&cut).unwrap();
    let (a, b) = (strip(&full), strip(&cut));
    assert_eq!(a.len(), 6);
    assert_eq!(
        a, b,
        "identical metrics, reflected shares and distinct outcomes included"
    );
}

/// The native engine on quester-model's tiny random Llama: the strategy segment is drawn at
/// its own temperature, the scaffold's tokens are forced (temperature 0), the rest at the
/// action temperature, every token's temperature recorded; per-rollout strategy temperatures
/// start each trial of a group at its own.
#[test]
fn the_strategy_segment_is_sampled_at_its_own_temperature_token_by_token() {
    let tmp = tempfile::tempdir().unwrap();
    let level = level_file(tmp.path());
    let mut cfg = config("sge", 2, &level, 1);
    cfg.model.kind = quester_train::config::PolicyKind::Native;
    cfg.model.path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../quester-model/tests/fixtures/tiny-llama")
        .display()
        .to_string();
    cfg.model.lora.rank = 4;
    cfg.model.max_response_tokens = 24;
    cfg.rollout.max_turns = 1;
    cfg.rollout.group_size = 4;
    cfg.methods
        .edit(|t: &mut SgeConfig| {
            t.strategy_temperature = 1.3;
            t.action_temperature = 0.6;
            t.after_strategy = "\n<action>\n".into();
            t.max_strategy_tokens = 6;
        })
        .unwrap();
    let mut policy = build_policy(&cfg).unwrap();
    let factory = env_factory(&cfg);
    let run = |cfg: &TrainConfig, policy: &mut Box<dyn quester_train::policy::TrainablePolicy>| {
        let templates = PromptTemplates::from_config(cfg).unwrap();
        let sge = Sge::new(Common {
            cfg: cfg.clone(),
            templates,
        })
        .unwrap();
        run_trials(
            policy.as_mut(),
            &*factory,
            &sge.train_requests(0),
            &sge.train_spec(),
            None,
        )
        .unwrap()
    };
    let trials = run(&cfg, &mut policy);
    let forced_text = "</strategy>\n<action>\n";
    for t in &trials {
        let s = &t.samples[0];
        let temps = &s.temperatures;
        assert_eq!(temps.len(), s.response_ids.len());
        let first_forced = temps
            .iter()
            .position(|&x| x == 0.0)
            .expect("a forced close");
        assert!(
            first_forced <= 6,
            "forced by token 6 at the latest: {temps:?}"
        );
        assert!(temps[..first_forced].iter().all(|&x| x == 1.3), "{temps:?}");
        let forced_end = first_forced
            + temps[first_forced..]
                .iter()
                .take_while(|&&x| x == 0.0)
                .count();
        assert!(temps[forced_end..].iter().all(|&x| x == 0.6), "{temps:?}");
        if forced_end < temps.len() {
            // The whole scaffold went in before the first token at the action temperature.
            assert!(s.response.contains(forced_text), "{:?}", s.response);
        }
    }
    // Per-rollout strategy temperatures: trial i starts at entry i mod 2.
    cfg.methods
        .edit(|t: &mut SgeConfig| {
            t.group_strategy_temperatures = vec![0.9, 1.5];
        })
        .unwrap();
    for t in run(&cfg, &mut policy) {
        let want = [0.9, 1.5][t.trial % 2];
        assert_eq!(t.samples[0].temperatures[0], want, "trial {}", t.trial);
    }
}
