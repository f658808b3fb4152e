//! HeRL against GRPO on the instruction-following rubric env with the tabular policy (seconds,
//! fixed seeds), and what one hindsight pass does to a group.
//!
//! The tabular policy keeps one softmax per distinct prompt over sixteen fixed answers: every
//! combination of lower / upper case, with / without a comma, quoted / not, with / without a
//! `<<title>>`. A task asks for two of those properties, so a random answer meets each with
//! probability 1/2 and both with 1/4.
//! The env draws tasks from a pool of eight (`pool_size`), so prompts repeat and a table can
//! learn. Both methods see four answers per task per step; HeRL also rewrites the best failed
//! answers of each unsolved group (up to four) and trains the best rewrite in place of one
//! answer. The tabular policy cannot carry what it learns under a hindsight prompt over to the
//! task's own prompt, so HeRL runs here with `herl.train_under = "original"`.

use quester_train::api::{build_policy, env_factory};
use quester_train::method::herl::Herl;
use quester_train::method::{Common, PassContext, TrainingMethod};
use quester_train::prompts::PromptTemplates;
use quester_train::rollout::run_trials;
use quester_train::sample::SampleRole;
use quester_train::trainer::Trainer;
use quester_train::TrainConfig;

const STEPS: usize = 40;
const SEEDS: [u64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

fn answers() -> Vec<String> {
    let base = "the quick brown fox jumps over the lazy dog and then it runs back home to sleep";
    let mut out = Vec::new();
    for upper in [false, true] {
        for comma in [false, true] {
            for quoted in [false, true] {
                for titled in [false, true] {
                    let mut s = if comma {
                        base.replacen(" and then", ", and then", 1)
                    } else {
                        base.to_string()
                    };
                    if titled {
                        s = format!("<<a fox tale>> {s}");
                    }
                    if upper {
                        s = s.to_uppercase();
                    }
                    if quoted {
                        s = format!("\"{s}\"");
                    }
                    out.push(s);
                }
            }
        }
    }
    out
}

fn config(method: &str, seed: u64) -> TrainConfig {
    let candidates: Vec<String> = answers().iter().map(|a| format!("{a:?}")).collect();
    let herl = if method == "herl" {
        "[herl]\nmax_candidates = 4\ntrain_under = \"original\"\n"
    } else {
        ""
    };
    let text = format!(
        r#"
[model]
kind = "tabular"
tabular_candidates = [{candidates}]
[env]
name = "instruction"
[env.settings]
split = "train"
min_constraints = 2
max_constraints = 2
pool_size = 8
families = ["change_case:english_lowercase", "change_case:english_capital", "punctuation:no_comma", "startend:quotation", "detectable_format:title"]
[algorithm]
method = "{method}"
num_attempts = 1
do_reflection = false
reflection_type = "none"
[algorithm.advantage]
normalization = "mean_std_norm"
invalid_penalty = 0.0
[algorithm.loss]
entropy_coef = 0.0
[rollout]
tasks_per_step = 8
group_size = 4
[training]
steps = {STEPS}
grad_clip = 0.0
mini_batch = 512
seed = {seed}
checkpoint_every = 0
[training.optimizer]
lr = 0.05
[eval]
at_start = false
at_end = false
tasks = 8
num_attempts = 1
[eval.env_settings]
split = "test"
[output]
progress = false
trajectories_per_step = 0
{herl}"#,
        candidates = candidates.join(", ")
    );
    let table: toml::Table = toml::from_str(&text).unwrap();
    TrainConfig::from_table(table).unwrap()
}

/// Mean training reward (the policy's own answers) over all steps, and over the last five.
fn run(method: &str, seed: u64) -> (f64, f64) {
    let cfg = config(method, seed);
    let dir = tempfile::tempdir().unwrap();
    let policy = build_policy(&cfg).unwrap();
    let mut trainer =
        Trainer::new(cfg.clone(), policy, env_factory(&cfg), dir.path(), false).unwrap();
    trainer.run().unwrap();
    let rows = trainer.run_dir().read_metrics().unwrap();
    let rewards: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.get("reward_mean").and_then(serde_json::Value::as_f64))
        .collect();
    assert_eq!(rewards.len(), STEPS);
    let all = rewards.iter().sum::<f64>() / STEPS as f64;
    let last = rewards[STEPS - 5..].iter().sum::<f64>() / 5.0;
    (all, last)
}

#[test]
fn herl_reward_rises_faster_than_grpo() {
    let (mut herl, mut grpo, mut wins) = ((0.0, 0.0), (0.0, 0.0), 0);
    for seed in SEEDS {
        let h = run("herl", seed);
        let g = run("grpo", seed);
        println!(
            "seed {seed}: mean reward over {STEPS} steps HeRL {:.3} GRPO {:.3}; \
             last 5 steps HeRL {:.3} GRPO {:.3}",
            h.0, g.0, h.1, g.1
        );
        wins += usize::from(h.0 > g.0);
        herl = (herl.0 + h.0, herl.1 + h.1);
        grpo = (grpo.0 + g.0, grpo.1 + g.1);
    }
    let n = SEEDS.len() as f64;
    let (h, g) = ((herl.0 / n, herl.1 / n), (grpo.0 / n, grpo.1 / n));
    println!(
        "mean of {} seeds: over all steps HeRL {:.3} GRPO {:.3}; last 5 steps HeRL {:.3} \
         GRPO {:.3}; HeRL ahead over all steps in {wins} of {} seeds",
        SEEDS.len(),
        h.0,
        g.0,
        h.1,
        g.1,
        SEEDS.len()
    );
    // Untrained: 0.5. Both learn. The margin is small by construction (the tabular policy's
    // rewrites are uninformed draws and the hindsight objective gives a quarter of PPO's
    // gradient at rho = 1), so the claim is the sign, seed by seed: HeRL's area under the
    // reward curve is larger in at least 7 of 8 seeds (8 of 8 when this was written:
    // +0.007 on average).
    assert!(g.1 > 0.65, "GRPO does not learn: {g:?}");
    assert!(
        wins >= 7 && h.0 > g.0,
        "HeRL {h:?} vs GRPO {g:?}, {wins} wins"
    );
}

#[test]
fn one_hindsight_pass_revises_an_unsolved_group() {
    // Originals: always the plain answer (lowercase, a comma, unquoted); rewrites: always the
    // answer that is lowercase, comma-free and quoted. Tasks asking for lowercase + no comma
    // score 0.5 originally and 1.0 rewritten.
    let all = answers();
    let (plain, fixed) = (all[4].clone(), all[2].clone());
    assert!(plain.contains(',') && !fixed.contains(',') && fixed.starts_with('"'));
    let mut cfg = config("herl", 7);
    cfg.env.settings.insert(
        "families".into(),
        toml::Value::Array(vec![
            "change_case:english_lowercase".into(),
            "punctuation:no_comma".into(),
        ]),
    );
    let templates = PromptTemplates::from_config(&cfg).unwrap();
    let common = Common {
        cfg: cfg.clone(),
        templates,
    };
    let mut herl = Herl::new(common).unwrap();
    let factory = env_factory(&cfg);
    let mut originals = cfg.clone();
    originals.model.tabular_candidates = vec![plain.clone()];
    let mut rewrites = cfg.clone();
    rewrites.model.tabular_candidates = vec![fixed.clone()];
    let mut p_orig = build_policy(&originals).unwrap();
    let mut p_rew = build_policy(&rewrites).unwrap();

    let requests = herl.train_requests(0);
    let mut trials = run_trials(
        p_orig.as_mut(),
        &*factory,
        &requests,
        &herl.train_spec(),
        None,
    )
    .unwrap();
    assert!(trials
        .iter()
        .all(|t| (t.samples[0].reward - 0.5).abs() < 1e-12));
    herl.extra_passes(
        0,
        &mut trials,
        &mut PassContext {
            policy: p_rew.as_mut(),
            make_env: &*factory,
        },
    )
    .unwrap();
    for group in trials.chunks(4) {
        // Every answer tied at 0.5: each got a rewrite scoring 1.0, so a bonus of
        // 0.05 * (1.0 - 0.5) (on those whose slot was not taken).
        let roles: Vec<Vec<SampleRole>> = group
            .iter()
            .map(|t| t.samples.iter().map(|s| s.role).collect())
            .collect();
        let hindsight: Vec<_> = group
            .iter()
            .flat_map(|t| t.samples.iter())
            .filter(|s| s.role == SampleRole::Hindsight)
            .collect();
        assert_eq!(hindsight.len(), 1, "{roles:?}");
        let h = hindsight[0];
        assert_eq!(h.response, fixed);
        assert!((h.reward - 1.0).abs() < 1e-12);
        assert!(h.prompt.contains("Unmet:\n1. "), "{}", h.prompt);
        assert!(h.prompt.contains(&plain), "the draft is shown");
        let replaced = group
            .iter()
            .flat_map(|t| t.samples.iter())
            .filter(|s| s.role == SampleRole::Replaced)
            .count();
        assert_eq!(replaced, 1);
        // Rewrites not chosen are logged, one per other candidate.
        let logged = group
            .iter()
            .flat_map(|t| t.samples.iter())
            .filter(|s| s.role == SampleRole::Rewrite)
            .count();
        assert_eq!(logged, 3);
        for t in group {
            let trained: Vec<_> = t.samples.iter().filter(|s| s.role.is_trained()).collect();
            assert_eq!(trained.len(), 1, "one trained answer per slot");
            if trained[0].role == SampleRole::Policy {
                assert!((trained[0].score_adjustment - 0.025).abs() < 1e-12);
            }
        }
    }
}
