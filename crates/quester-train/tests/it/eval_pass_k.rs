//! The pass@k curve of evaluation (`eval.samples_per_task` trials per task, the unbiased
//! estimator) with the tabular policy on the meta-bandit: the curve against the estimator
//! computed by hand over the trials returned, its monotonicity, sample 0 of every task being the
//! old evaluation exactly, and the keys a training run logs.

use std::collections::BTreeMap;

use quester_train::api::{build_policy, env_factory};
use quester_train::prompts::PromptTemplates;
use quester_train::rng::{derive, purpose};
use quester_train::sample::Trial;
use quester_train::trainer::{evaluate_policy, EvalResult};
use quester_train::TrainConfig;

fn config(samples_per_task: usize) -> TrainConfig {
    let mut cfg = crate::common::lamer_bandit(0.9, 2);
    cfg.eval.tasks = 40;
    cfg.eval.samples_per_task = samples_per_task;
    cfg.validate().unwrap();
    cfg
}

/// An evaluation of the untrained tabular policy.
fn evaluate(cfg: &TrainConfig) -> EvalResult {
    let mut policy = build_policy(cfg).unwrap();
    let factory = env_factory(cfg);
    let templates = PromptTemplates::builtin("bandit");
    evaluate_policy(policy.as_mut(), &*factory, cfg, &templates).unwrap()
}

/// C(n, k) as an exact integer.
fn binomial(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    (0..k).fold(1, |acc, i| acc * (n - i) / (i + 1))
}

#[test]
fn curve_equals_the_estimator_over_the_trials_returned() {
    let cfg = config(8);
    let ev = evaluate(&cfg);
    assert_eq!(ev.trials.len(), 40 * 8);
    assert_eq!(ev.samples_per_task, 8);
    let ks: Vec<usize> = ev.pass_k.iter().map(|p| p.0).collect();
    assert_eq!(ks, vec![1, 2, 4, 8]);

    // Per task: n trials (numbered 0..8, one task id), c of them won in some attempt.
    let mut tasks: BTreeMap<u64, Vec<&Trial>> = BTreeMap::new();
    for t in &ev.trials {
        tasks.entry(t.task_seed).or_default().push(t);
    }
    assert_eq!(tasks.len(), 40);
    for trials in tasks.values() {
        let mut idx: Vec<usize> = trials.iter().map(|t| t.trial).collect();
        idx.sort_unstable();
        assert_eq!(idx, (0..8).collect::<Vec<_>>());
        assert!(trials.iter().all(|t| t.task_id == trials[0].task_id));
    }
    let counts: Vec<(u64, u64)> = tasks
        .values()
        .map(|ts| {
            let c = ts
                .iter()
                .filter(|t| t.attempts.iter().any(|a| a.won))
                .count();
            (ts.len() as u64, c as u64)
        })
        .collect();
    // Not a degenerate case: some tasks are solved by some samples and not all.
    assert!(
        counts.iter().any(|&(n, c)| c > 0 && c < n),
        "every task all-or-nothing: {counts:?}"
    );
    for &(k, value) in &ev.pass_k {
        let k = k as u64;
        let want = counts
            .iter()
            .map(|&(n, c)| 1.0 - binomial(n - c, k) as f64 / binomial(n, k) as f64)
            .sum::<f64>()
            / counts.len() as f64;
        assert!((value - want).abs() < 1e-12, "k={k}: {value} vs {want}");
    }
    for w in ev.pass_k.windows(2) {
        assert!(w[1].1 >= w[0].1, "not non-decreasing: {:?}", ev.pass_k);
    }
    // pass@1 of the curve is the share of trials won in any attempt: pass@num_attempts over
    // attempts, averaged over all trials.
    assert!((ev.pass_k[0].1 - ev.pass_at[cfg.eval.num_attempts - 1]).abs() < 1e-12);
    // The samples differ (their own streams), so the curve rises above pass@1.
    assert!(ev.pass_k[3].1 > ev.pass_k[0].1, "{:?}", ev.pass_k);

    // A smaller maximum k cuts the curve, values unchanged.
    let mut cut = cfg.clone();
    cut.eval.pass_k_max = 6;
    let ev6 = evaluate(&cut);
    let ks: Vec<usize> = ev6.pass_k.iter().map(|p| p.0).collect();
    assert_eq!(ks, vec![1, 2, 4, 6]);
    assert_eq!(ev6.pass_k[..3], ev.pass_k[..3]);
}

#[test]
fn one_sample_per_task_is_the_old_evaluation() {
    let one = config(1);
    // The requests are exactly the old ones: one trial 0 per task with the old stream.
    let method = quester_train::method::build(&one, &PromptTemplates::builtin("bandit")).unwrap();
    let reqs = method.eval_requests();
    assert_eq!(reqs.len(), 40);
    for (i, r) in reqs.iter().enumerate() {
        assert_eq!(r.task_id, format!("eval{i}"));
        assert_eq!(r.task_seed, one.env.eval_seed_base + i as u64);
        assert_eq!(r.trial, 0);
        assert_eq!(
            r.gen_seed,
            derive(one.training.seed, &[purpose::EVAL_GEN, i as u64])
        );
    }
    let ev1 = evaluate(&one);
    assert_eq!(ev1.samples_per_task, 1);
    assert_eq!(ev1.pass_k.len(), 1);
    assert_eq!(ev1.pass_k[0].0, 1);
    assert_eq!(ev1.pass_k[0].1, ev1.pass_at[one.eval.num_attempts - 1]);

    // With 8 samples, sample 0 of every task is that trial, unchanged; the others are new.
    let ev8 = evaluate(&config(8));
    let first: Vec<&Trial> = ev8.trials.iter().filter(|t| t.trial == 0).collect();
    assert_eq!(first.len(), ev1.trials.len());
    // (The tabular policy numbers prompts in the order it meets them, so prompt ids depend on
    // what else was evaluated; everything played is the same.)
    let played = |t: &Trial| {
        let mut t = t.clone();
        for s in &mut t.samples {
            s.prompt_ids.clear();
        }
        t
    };
    for (a, b) in first.iter().zip(&ev1.trials) {
        assert_eq!(played(a), played(b));
    }
    let reqs8 = quester_train::method::build(&config(8), &PromptTemplates::builtin("bandit"))
        .unwrap()
        .eval_requests();
    let mut seeds: Vec<u64> = reqs8.iter().map(|r| r.gen_seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), 40 * 8, "every sample has its own streams");
    // pass@1 over attempts of the 8-sample evaluation restricted to sample 0 is the old pass@1.
    let won_first = first.iter().filter(|t| t.won_within(1)).count() as f64 / first.len() as f64;
    assert_eq!(won_first, ev1.pass_at[0]);
}

#[test]
fn training_logs_the_curve_at_start_and_end() {
    let mut cfg = config(4);
    cfg.eval.at_start = true;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("eval_pass_k/run");
    let _ = std::fs::remove_dir_all(&dir);
    quester_train::train(&cfg, &dir, false).unwrap();
    let rows = quester_train::run_dir::RunDir::new(&dir)
        .read_metrics()
        .unwrap();
    let evals: Vec<_> = rows
        .iter()
        .filter(|r| r.contains_key("eval_pass_k@1"))
        .collect();
    assert_eq!(evals.len(), 2, "the step-0 and the final evaluation");
    for r in &evals {
        assert_eq!(r["eval_samples_per_task"].as_u64(), Some(4));
        for k in [1, 2, 4] {
            let p = r[&format!("eval_pass_k@{k}")].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&p));
        }
        assert!(!r.contains_key("eval_pass_k@3"));
        // The pass@attempt keys are still there.
        assert!(r.contains_key("eval_pass@1") && r.contains_key("eval_pass@2"));
    }
    // The curve's plot in the run report: quester-report's tests (report_from_training).

    // `quester evaluate`'s report carries the curve and prints it as one line.
    let report = quester_train::evaluate(&cfg, None, None).unwrap();
    assert_eq!(report.samples_per_task, 4);
    let ks: Vec<usize> = report.pass_k.iter().map(|p| p.k).collect();
    assert_eq!(ks, vec![1, 2, 4]);
    let line = report.pass_k_line();
    let want = format!(
        "pass@k (n=4): k=1 {:.3}  k=2 {:.3}  k=4 {:.3}",
        report.pass_k[0].value, report.pass_k[1].value, report.pass_k[2].value
    );
    assert_eq!(line, want);
    // It is the untrained policy's evaluation: the step-0 row's curve.
    for p in &report.pass_k {
        assert_eq!(
            evals[0][&format!("eval_pass_k@{}", p.k)].as_f64(),
            Some(p.value)
        );
    }
}

#[test]
fn eval_seed_fixes_the_streams_whatever_the_training_seed() {
    let mut a = config(1);
    let mut b = config(1);
    a.training.seed = 1;
    b.training.seed = 2;
    let streams = |c: &TrainConfig| -> Vec<u64> {
        let m = quester_train::method::build(c, &PromptTemplates::builtin("bandit")).unwrap();
        m.eval_requests().iter().map(|r| r.gen_seed).collect()
    };
    assert_ne!(
        streams(&a),
        streams(&b),
        "unset: the training seed's streams"
    );
    a.eval.seed = Some(9);
    b.eval.seed = Some(9);
    assert_eq!(streams(&a), streams(&b));
    assert_eq!(
        streams(&a)[3],
        derive(9, &[purpose::EVAL_GEN, 3]),
        "eval.seed takes the training seed's place"
    );
    // Unset, the resolved config does not mention it (old run directories still resume).
    assert!(!config(1).to_toml().unwrap().contains("seed = 9"));
    assert!(a.to_toml().unwrap().contains("seed = 9"));
}

#[test]
fn per_task_outcomes_count_first_wins_rewards_and_invalid_plays() {
    let cfg = config(3);
    let ev = evaluate(&cfg);
    let tasks = quester_train::trainer::per_task_outcomes(&ev.trials, cfg.eval.num_attempts);
    assert_eq!(tasks.len(), 40);
    for t in &tasks {
        let trials: Vec<&Trial> = ev
            .trials
            .iter()
            .filter(|x| x.task_seed == t.task_seed)
            .collect();
        assert_eq!(t.trials, trials.len());
        for k in 0..cfg.eval.num_attempts {
            let by_hand = trials
                .iter()
                .filter(|x| x.attempts.iter().take(k + 1).any(|a| a.won))
                .count();
            assert_eq!(t.solved_by[k], by_hand, "task {} k {}", t.task_seed, k + 1);
        }
        let attempts: usize = trials.iter().map(|x| x.attempts.len()).sum();
        assert_eq!(t.attempts, attempts);
        let reward: f64 = trials
            .iter()
            .flat_map(|x| x.attempts.iter().map(|a| a.reward_sum))
            .sum();
        assert!((t.reward_sum - reward).abs() < 1e-12);
    }
    // Over all tasks the shares are the evaluation's own pass@k.
    let trials: usize = tasks.iter().map(|t| t.trials).sum();
    for k in 0..cfg.eval.num_attempts {
        let solved: usize = tasks.iter().map(|t| t.solved_by[k]).sum();
        assert!((solved as f64 / trials as f64 - ev.pass_at[k]).abs() < 1e-12);
    }
}

#[test]
fn a_second_evaluation_into_a_folder_replaces_the_trials() {
    let cfg = config(1);
    let dir = tempfile::tempdir().unwrap();
    let lines = || {
        std::fs::read_to_string(dir.path().join("trajectories.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    quester_train::api::evaluate(&cfg, None, Some(dir.path())).unwrap();
    assert_eq!(lines(), 40, "one trial per task");
    quester_train::api::evaluate(&cfg, None, Some(dir.path())).unwrap();
    assert_eq!(lines(), 40, "the rerun's trials only, as in eval.json");
}
