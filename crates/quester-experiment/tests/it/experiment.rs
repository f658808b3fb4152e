//! The experiment runner: plans checked before anything runs, aggregation and intervals on
//! hand-made result files, and a killed experiment that resumes without repeating or losing a
//! unit (tabular policy on the meta-bandit: seconds).

use std::path::{Path, PathBuf};

use quester_algos::{mean_ci, paired_diff_ci, BootstrapConfig};
use quester_experiment::runner::Trained;
use quester_experiment::{aggregate, write_outputs, ExperimentError, Plan, Runner, Unit};
use quester_train::trainer::TaskOutcome;

/// A tabular LaMer preset on the bandit (2 attempts, history of the previous attempt).
const LAMER: &str = r#"
[model]
kind = "tabular"
tabular_candidates = ["<action>1</action>", "<action>2</action>", "<action>3</action>", "<action>4</action>", "<action>scout</action>"]
[env]
name = "bandit"
[algorithm]
method = "lamer"
num_attempts = 2
do_reflection = false
reflection_type = "history_only"
traj_gamma = 0.9
[rollout]
tasks_per_step = 4
group_size = 4
[training]
steps = 100
lr = 0.1
grad_clip = 0.0
mini_batch = 64
checkpoint_every = 2
[eval]
tasks = 8
num_attempts = 2
[output]
trajectories_per_step = 1
"#;

/// The GRPO baseline of the same shape per step (4 tasks x 8 single episodes = 32 episodes).
const GRPO: &str = r#"
[model]
kind = "tabular"
tabular_candidates = ["<action>1</action>", "<action>2</action>", "<action>3</action>", "<action>4</action>", "<action>scout</action>"]
[env]
name = "bandit"
[algorithm]
method = "grpo"
num_attempts = 1
do_reflection = false
reflection_type = "none"
signal = "episode_score"
norm = "mean_std_norm"
traj_gamma = 0.0
[rollout]
tasks_per_step = 4
group_size = 8
[training]
steps = 100
lr = 0.1
grad_clip = 0.0
mini_batch = 64
checkpoint_every = 2
[eval]
tasks = 8
num_attempts = 2
[output]
trajectories_per_step = 1
"#;

fn write_presets(dir: &Path) -> (PathBuf, PathBuf) {
    let (l, g) = (dir.join("lamer.toml"), dir.join("grpo.toml"));
    std::fs::write(&l, LAMER).unwrap();
    std::fs::write(&g, GRPO).unwrap();
    (l, g)
}

fn plan_text(lamer: &Path, grpo: &Path, extra_run_set: &str) -> String {
    format!(
        r#"
name = "bandit-test"
description = "LaMer against GRPO on the tabular bandit."
seeds = [3, 4]
[budget]
episodes = 128
[eval]
tasks = 16
num_attempts = 2
temperature = 1.0
top_p = 1.0
top_k = 0
seed = 11
[[run]]
name = "lamer"
preset = "{}"
set = [{extra_run_set}]
[[run]]
name = "grpo"
preset = "{}"
"#,
        lamer.display(),
        grpo.display()
    )
}

fn plan(dir: &Path) -> Plan {
    let (l, g) = write_presets(dir);
    let path = dir.join("plan.toml");
    let text = plan_text(&l, &g, "");
    std::fs::write(&path, &text).unwrap();
    Plan::load(&path).unwrap()
}

#[test]
fn the_budget_becomes_steps_and_the_eval_is_the_plans() {
    let tmp = tempfile::tempdir().unwrap();
    let p = plan(tmp.path());
    let lamer = p.config(0, 3).unwrap();
    let grpo = p.config(1, 4).unwrap();
    // 128 episodes: LaMer 4 x 4 x 2 = 32 per step, GRPO 4 x 8 x 1 = 32 per step.
    assert_eq!((lamer.training.steps, grpo.training.steps), (4, 4));
    assert_eq!((lamer.training.seed, grpo.training.seed), (3, 4));
    for c in [&lamer, &grpo] {
        assert_eq!(
            (c.eval.tasks, c.eval.num_attempts, c.eval.seed),
            (16, 2, Some(11))
        );
        assert!(!c.eval.at_start && !c.eval.at_end && !c.output.progress);
    }
    assert_eq!(p.compare, vec![["lamer".to_string(), "grpo".to_string()]]);
}

#[test]
fn a_bad_plan_fails_before_any_run_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (l, g) = write_presets(tmp.path());
    let path = tmp.path().join("plan.toml");
    // An unknown key in a run's overrides: serde names it, the error names the run.
    std::fs::write(&path, plan_text(&l, &g, "\"training.learning_rate=0.1\"")).unwrap();
    let e = Plan::load(&path).unwrap_err();
    let msg = format!(
        "{e}: {:?}",
        std::error::Error::source(&e).map(std::string::ToString::to_string)
    );
    assert!(matches!(e, ExperimentError::RunConfig { .. }), "{msg}");
    assert!(
        msg.contains("learning_rate") && msg.contains("`lamer`"),
        "{msg}"
    );
    // An unknown key of the plan itself.
    let text = plan_text(&l, &g, "").replace("[budget]", "seed = 1\n[budget]");
    std::fs::write(&path, text).unwrap();
    let msg = Plan::load(&path).unwrap_err().to_string();
    assert!(msg.contains("unknown field `seed`"), "{msg}");
    // A budget that is not a whole number of a run's steps.
    let text = plan_text(&l, &g, "").replace("episodes = 128", "episodes = 100");
    std::fs::write(&path, text).unwrap();
    let msg = Plan::load(&path).unwrap_err().to_string();
    assert!(msg.contains("budget.episodes = 100"), "{msg}");
    // A missing preset and a comparison of an unknown run.
    let text = plan_text(&l, &g, "").replace(&g.display().to_string(), "nope.toml");
    std::fs::write(&path, text).unwrap();
    let msg = Plan::load(&path).unwrap_err().to_string();
    assert!(msg.contains("preset `nope.toml` not found"), "{msg}");
    let text = format!(
        "{}\ncompare = [[\"lamer\", \"ppo\"]]\n",
        plan_text(&l, &g, "")
    );
    let text = text.replace(
        "[[run]]\nname = \"lamer\"",
        "compare = [[\"lamer\", \"ppo\"]]\n[[run]]\nname = \"lamer\"",
    );
    std::fs::write(&path, text).unwrap();
    assert!(Plan::load(&path).is_err());
    // Nothing was created anywhere.
    assert!(!tmp.path().join("runs").exists());
}

fn task(seed: u64, trials: usize, solved_by: &[usize], reward: f64, invalid: usize) -> TaskOutcome {
    TaskOutcome {
        task_seed: seed,
        trials,
        solved_by: solved_by.to_vec(),
        reward_sum: reward,
        attempts: trials * solved_by.len(),
        plays: trials * solved_by.len(),
        invalid,
    }
}

fn write_eval(dir: &Path, tasks: &[TaskOutcome], seconds: f64) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("eval.json"), format!("{{\"seconds\": {seconds}}}")).unwrap();
    let lines: Vec<String> = tasks
        .iter()
        .map(|t| serde_json::to_string(t).unwrap())
        .collect();
    std::fs::write(dir.join("eval_tasks.jsonl"), lines.join("\n") + "\n").unwrap();
}

fn write_marker(runner: &Runner, run: usize, seed: u64, secs: f64) {
    let m = Trained {
        steps: 4,
        train_seconds: secs,
        episodes_per_step: 32,
        out_of_time: false,
    };
    std::fs::write(
        runner.seed_dir(run, seed).join("trained.json"),
        serde_json::to_string(&m).unwrap(),
    )
    .unwrap();
}

#[test]
fn aggregation_of_hand_made_results() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::new(plan(tmp.path()), &tmp.path().join("exp"));
    // Four tasks, one trial each, two attempts. LaMer seed 3 solves tasks 0, 1 by attempt 2
    // (task 0 in attempt 1); seed 4 solves tasks 0, 1, 2 by attempt 2. GRPO solves task 0 in
    // attempt 1 with both seeds. Untrained LaMer solves nothing.
    let seeds = [1000u64, 1001, 1002, 1003];
    let lamer = [
        vec![
            task(seeds[0], 1, &[1, 1], 1.0, 0),
            task(seeds[1], 1, &[0, 1], 1.0, 0),
            task(seeds[2], 1, &[0, 0], 0.0, 1),
            task(seeds[3], 1, &[0, 0], 0.0, 2),
        ],
        vec![
            task(seeds[0], 1, &[1, 1], 1.0, 0),
            task(seeds[1], 1, &[0, 1], 1.0, 0),
            task(seeds[2], 1, &[0, 1], 1.0, 0),
            task(seeds[3], 1, &[0, 0], 0.0, 0),
        ],
    ];
    let grpo: Vec<TaskOutcome> = (0..4)
        .map(|i| {
            let s = usize::from(i == 0);
            task(seeds[i], 1, &[s, s], s as f64, 0)
        })
        .collect();
    for (i, seed) in [3u64, 4].into_iter().enumerate() {
        write_eval(
            &runner.eval_dir(&Unit::Eval { run: 0, seed }),
            &lamer[i],
            10.0,
        );
        write_marker(&runner, 0, seed, 100.0 + 20.0 * i as f64);
        write_eval(&runner.eval_dir(&Unit::Eval { run: 1, seed }), &grpo, 10.0);
        write_marker(&runner, 1, seed, 50.0);
    }
    let none: Vec<TaskOutcome> = (0..4).map(|i| task(seeds[i], 1, &[0, 0], 0.0, 2)).collect();
    write_eval(&runner.eval_dir(&Unit::Untrained { run: 0 }), &none, 5.0);

    let s = aggregate(&runner).unwrap();
    assert_eq!(s.metrics, ["pass@1", "pass@2", "reward", "invalid_rate"]);
    let l = &s.runs[0];
    assert_eq!(l.seeds_done, vec![3, 4]);
    assert_eq!((l.steps, l.episodes), (Some(4), Some(128)));
    let t = l.trained.as_ref().unwrap();
    // pass@1: 1/4 in both seeds; pass@2: (2 + 3) / 8; reward (per attempt): (2 + 3) / 16;
    // invalid: (1/2 + 2/2) / 8 over the two seeds' tasks.
    assert_eq!(t["pass@1"].mean, 0.25);
    assert_eq!(t["pass@2"].mean, 0.625);
    assert_eq!(t["reward"].mean, 5.0 / 16.0);
    assert_eq!(t["invalid_rate"].mean, 1.5 / 8.0);
    // The interval is the bootstrap of the seeds x tasks table, with the plan's settings.
    let cfg = BootstrapConfig::default();
    let table: Vec<Vec<f64>> = lamer
        .iter()
        .map(|ts| ts.iter().map(|t| t.solved_by[1] as f64).collect())
        .collect();
    assert_eq!(t["pass@2"], mean_ci(&table, &cfg).unwrap());
    assert!(t["pass@2"].lo < 0.625 && t["pass@2"].hi > 0.625);
    // Untrained: nothing solved, every action invalid: point intervals.
    let u = l.untrained.as_ref().unwrap();
    assert_eq!(
        (u["pass@2"].mean, u["pass@2"].lo, u["pass@2"].hi),
        (0.0, 0.0, 0.0)
    );
    assert_eq!(u["invalid_rate"].mean, 1.0);
    // Gain over the untrained policy = the trained figure (untrained is all zeros).
    let g = l.gain.as_ref().unwrap();
    assert_eq!(g["pass@2"].mean, 0.625);
    assert_eq!(
        s.runs[1].gain, None,
        "GRPO's untrained policy was not evaluated"
    );
    // The paired comparison on the same tasks and seeds.
    let c = &s.comparisons[0];
    assert_eq!((c.a.as_str(), c.b.as_str(), c.seeds), ("lamer", "grpo", 2));
    assert_eq!(c.diff["pass@1"].mean, 0.0);
    assert_eq!(c.diff["pass@2"].mean, 0.375);
    let grpo_table: Vec<Vec<f64>> = (0..2)
        .map(|_| grpo.iter().map(|t| t.solved_by[1] as f64).collect())
        .collect();
    assert_eq!(
        c.diff["pass@2"],
        paired_diff_ci(&table, &grpo_table, &cfg).unwrap()
    );
    // pass@1 agrees cell by cell: a point interval at 0.
    assert_eq!((c.diff["pass@1"].lo, c.diff["pass@1"].hi), (0.0, 0.0));
    // Wall time per seed.
    assert_eq!(l.train_seconds.unwrap().mean, 110.0);

    let out = write_outputs(&s, runner.dir()).unwrap();
    let md = std::fs::read_to_string(&out.markdown).unwrap();
    assert!(
        md.contains("| lamer (untrained) | lamer | - | 0 | 0.000 [0.000, 0.000]"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "| lamer - grpo | 2 | +0.000 [+0.000, +0.000] | {}",
            if c.diff["pass@2"].excludes_zero() {
                "**+0.375"
            } else {
                "+0.375"
            }
        )),
        "{md}"
    );
    for p in &out.plots {
        assert_eq!(
            &std::fs::read(p).unwrap()[..4],
            b"\x89PNG",
            "{}",
            p.display()
        );
    }
    let html = std::fs::read_to_string(&out.html).unwrap();
    assert!(html.contains("<table>") && html.contains("data:image/png;base64,"));
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[test]
fn tasks_that_differ_between_seeds_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::new(plan(tmp.path()), &tmp.path().join("exp"));
    write_eval(
        &runner.eval_dir(&Unit::Eval { run: 0, seed: 3 }),
        &[task(1, 1, &[0, 0], 0.0, 0)],
        1.0,
    );
    write_eval(
        &runner.eval_dir(&Unit::Eval { run: 0, seed: 4 }),
        &[task(2, 1, &[0, 0], 0.0, 0)],
        1.0,
    );
    write_marker(&runner, 0, 3, 1.0);
    write_marker(&runner, 0, 4, 1.0);
    let msg = aggregate(&runner).unwrap_err().to_string();
    assert!(msg.contains("different tasks"), "{msg}");
}

/// The comparable part of a summary (wall times differ between runs of the same plan).
fn figures(s: &quester_experiment::Summary) -> String {
    let mut s = s.clone();
    for r in &mut s.runs {
        r.train_seconds = None;
        r.eval_seconds = None;
    }
    serde_json::to_string(&(s.runs, s.comparisons)).unwrap()
}

#[test]
fn a_killed_experiment_resumes_without_repeating_or_losing_a_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let p = plan(tmp.path());

    // The uninterrupted experiment.
    let mut whole = Runner::new(p.clone(), &tmp.path().join("whole"));
    whole.progress = false;
    let log = whole.run().unwrap();
    assert_eq!(log.executed.len(), 2 + 2 * 2 * 2);
    assert!(!log.interrupted);
    let reference = aggregate(&whole).unwrap();
    assert_eq!(reference.runs[0].seeds_done, vec![3, 4]);

    // Killed after three units (both untrained evaluations, LaMer seed 3's training) ...
    let dir = tmp.path().join("killed");
    let mut first = Runner::new(p.clone(), &dir);
    first.progress = false;
    first.stop_after_units = Some(3);
    let log1 = first.run().unwrap();
    assert!(log1.interrupted);
    assert_eq!(
        log1.executed,
        [
            "lamer untrained: eval",
            "grpo untrained: eval",
            "lamer seed 3: train"
        ]
    );
    // ... then killed inside a training unit (after 1 of its 4 steps) ...
    let mut second = Runner::new(p.clone(), &dir);
    second.progress = false;
    second.stop_after_steps = Some(1);
    let log2 = second.run().unwrap();
    assert!(log2.interrupted);
    assert_eq!(log2.skipped.len(), 3);
    assert_eq!(log2.executed, ["lamer seed 3: eval", "grpo seed 3: train"]);
    assert!(!second.is_done(&Unit::Train { run: 1, seed: 3 }));
    // A plan's run saves after every step, whatever its preset's cadence (2 here).
    let (_, saved) = quester_train::run_dir::RunDir::new(&second.seed_dir(1, 3).join("train"))
        .latest_checkpoint()
        .unwrap()
        .expect("a checkpoint after the one step done");
    assert_eq!(saved.step, 1);
    // ... and started again: it continues the unit it was in and repeats nothing.
    let mut third = Runner::new(p, &dir);
    third.progress = false;
    let log3 = third.run().unwrap();
    assert!(!log3.interrupted);
    assert_eq!(log3.skipped.len(), 4);
    assert_eq!(log3.executed[0], "grpo seed 3: train");
    assert_eq!(log3.executed.len(), 6);
    let all: Vec<&String> = log1
        .executed
        .iter()
        .chain(&log2.executed[..1])
        .chain(&log3.executed)
        .collect();
    assert_eq!(all.len(), log.executed.len(), "every unit ran exactly once");
    // The resumed experiment's figures are the uninterrupted one's, to the last digit.
    assert_eq!(figures(&aggregate(&third).unwrap()), figures(&reference));
    // Metrics rows of the resumed training run were not duplicated.
    let rows = quester_train::run_dir::RunDir::new(&third.seed_dir(1, 3).join("train"))
        .read_metrics()
        .unwrap();
    assert_eq!(rows.len(), 4);
}

/// A machine that keeps only the keep directory (a fresh checkout of a repository it was
/// committed to) restores the finished evaluations with their training runs, runs again the
/// training whose evaluation had not finished (its checkpoints are gone), and ends with the
/// uninterrupted experiment's figures.
#[test]
fn a_fresh_machine_with_only_the_keep_directory_skips_the_kept_units() {
    let tmp = tempfile::tempdir().unwrap();
    let p = plan(tmp.path());
    let mut whole = Runner::new(p.clone(), &tmp.path().join("whole"));
    whole.progress = false;
    whole.run().unwrap();
    let reference = aggregate(&whole).unwrap();

    let keep = tmp.path().join("kept");
    let mut first = Runner::new(p.clone(), &tmp.path().join("machine-1"));
    first.progress = false;
    first.keep = Some(keep.clone());
    // Both untrained evaluations, LaMer seed 3 trained and evaluated, GRPO seed 3 trained.
    first.stop_after_units = Some(5);
    assert!(first.run().unwrap().interrupted);
    assert!(keep.join("lamer/seed-3/eval/eval.json").is_file());
    assert!(keep.join("lamer/seed-3/train/metrics.jsonl").is_file());
    assert!(!keep.join("lamer/seed-3/train/checkpoints").exists());
    assert!(!keep.join("grpo/seed-3/trained.json").exists());
    // Trajectories are kept gzipped.
    assert!(keep
        .join("lamer/seed-3/eval/trajectories.jsonl.gz")
        .is_file());
    assert!(!keep.join("lamer/seed-3/eval/trajectories.jsonl").exists());

    let mut second = Runner::new(p, &tmp.path().join("machine-2"));
    second.progress = false;
    second.keep = Some(keep.clone());
    let log = second.run().unwrap();
    assert_eq!(
        log.skipped,
        [
            "lamer untrained: eval",
            "grpo untrained: eval",
            "lamer seed 3: train",
            "lamer seed 3: eval"
        ]
    );
    assert_eq!(log.executed[0], "grpo seed 3: train");
    assert_eq!(log.executed.len(), 6);
    assert_eq!(figures(&aggregate(&second).unwrap()), figures(&reference));
    let trajectories = |r: &Runner| {
        std::fs::read(
            r.eval_dir(&Unit::Eval { run: 0, seed: 3 })
                .join("trajectories.jsonl"),
        )
        .unwrap()
    };
    assert_eq!(trajectories(&second), trajectories(&first));
    // The learning curves include the restored training run's steps.
    let rows = quester_train::run_dir::RunDir::new(&second.seed_dir(0, 3).join("train"))
        .read_metrics()
        .unwrap();
    assert_eq!(rows.len(), 4);
    assert!(second.is_kept(&Unit::Eval { run: 1, seed: 4 }));
}

/// Every committed plan loads (its presets exist; every run's config is built and validated for
/// every seed), and a run that starts from a warm start names one `scripts/warm-start.sh` makes
/// and the plan's header says how: `runs/warm_start/ENV/sft`, trained by
/// `configs/sft_ENV_cpu.toml` on the run's env, with the same adapters (the checkpoint's
/// trainable variables) and, except under SGE's strategy-first prompt, the same answer prefix.
#[test]
fn the_committed_plans_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("experiments");
    let mut n = 0;
    let mut warm = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let p = Plan::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!p.runs.is_empty());
        n += 1;
        for (i, run) in p.runs.iter().enumerate() {
            let cfg = p.config(i, p.seeds[0]).unwrap();
            let init = &cfg.model.init;
            if init.is_empty() {
                continue;
            }
            let what = format!("{} run {}: model.init = {init}", path.display(), run.name);
            let env = init
                .strip_prefix("runs/warm_start/")
                .and_then(|r| r.strip_suffix("/sft"))
                .unwrap_or_else(|| panic!("{what}: not runs/warm_start/ENV/sft"));
            assert!(
                p.text.contains(&format!("scripts/warm-start.sh {env} ")),
                "{what}: the header does not give the warm start's command"
            );
            let sft_path = root.join(format!("configs/sft_{env}_cpu.toml"));
            let sft = quester_train::TrainConfig::load(&sft_path, &[])
                .unwrap_or_else(|e| panic!("{what}: {}: {e}", sft_path.display()));
            assert_eq!(sft.env.name, cfg.env.name, "{what}: another env");
            assert_eq!(sft.model.train, cfg.model.train, "{what}: model.train");
            let (a, b) = (&sft.model.lora, &cfg.model.lora);
            assert_eq!(
                (a.rank, a.alpha, &a.target_modules),
                (b.rank, b.alpha, &b.target_modules),
                "{what}: other adapters"
            );
            if cfg.algorithm.method != "sge" {
                assert_eq!(
                    sft.prompt.play_prefix, cfg.prompt.play_prefix,
                    "{what}: another answer prefix"
                );
            }
            warm += 1;
        }
    }
    assert!(n >= 1, "no plans in {}", dir.display());
    assert!(warm >= 1, "no plan starts from a warm start");
}

#[test]
fn a_plan_with_the_real_model_runs_end_to_end() {
    // The committed bandit presets with the default model (fetched like a user's first run),
    // shrunk to one step of one task and 4 evaluation bandits.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("real.toml");
    let text = format!(
        r#"
name = "real-model-smoke"
seeds = [0]
set = ["rollout.tasks_per_step=1", "rollout.group_size=2"]
[budget]
steps = 1
[eval]
tasks = 4
[[run]]
name = "lamer"
preset = "{}"
[[run]]
name = "grpo"
preset = "{}"
"#,
        root.join("configs/lamer_bandit_cpu.toml").display(),
        root.join("configs/grpo_bandit_cpu.toml").display()
    );
    std::fs::write(&path, text).unwrap();
    let mut runner = Runner::new(Plan::load(&path).unwrap(), &tmp.path().join("exp"));
    runner.progress = false;
    let log = runner.run().unwrap();
    assert_eq!(log.executed.len(), 6, "{log:?}");
    let s = aggregate(&runner).unwrap();
    for r in &s.runs {
        assert_eq!(r.seeds_done, vec![0]);
        let t = r.trained.as_ref().unwrap();
        assert!((0.0..=1.0).contains(&t["pass@3"].mean));
        assert!(r.gain.is_some() && r.untrained.is_some());
    }
    assert_eq!(s.comparisons.len(), 1);
    let out = write_outputs(&s, runner.dir()).unwrap();
    assert!(std::fs::read_to_string(out.markdown)
        .unwrap()
        .contains("| lamer (untrained) |"));
}

#[test]
fn a_changed_plan_is_refused_in_a_directory_that_ran_the_old_one() {
    let tmp = tempfile::tempdir().unwrap();
    let p = plan(tmp.path());
    let dir = tmp.path().join("exp");
    let mut first = Runner::new(p.clone(), &dir);
    first.progress = false;
    first.stop_after_units = Some(3); // both untrained evaluations and one training run
    first.run().unwrap();
    // The same plan continues.
    assert!(Runner::new(p, &dir).check_unchanged().is_ok());
    // Another budget: LaMer seed 3 was trained for 4 steps, the plan now asks for 2.
    let path = tmp.path().join("plan.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("episodes = 128", "episodes = 64");
    std::fs::write(&path, text).unwrap();
    let changed = Runner::new(Plan::load(&path).unwrap(), &dir);
    let msg = changed.check_unchanged().unwrap_err().to_string();
    assert!(
        msg.contains("lamer seed 3: train ran with another config"),
        "{msg}"
    );
    assert!(aggregate(&changed).is_err());
    // Another evaluation: the untrained evaluations are refused too.
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("episodes = 64", "episodes = 128")
        .replace("tasks = 16", "tasks = 12");
    std::fs::write(&path, text).unwrap();
    let msg = Runner::new(Plan::load(&path).unwrap(), &dir)
        .check_unchanged()
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("untrained: eval ran with another config"),
        "{msg}"
    );
}

#[test]
fn presets_and_overrides_of_either_config_layout_combine() {
    let tmp = tempfile::tempdir().unwrap();
    let (l, g) = write_presets(tmp.path());
    // An old-layout preset (flat `training.lr`) with a new-layout override: the override wins.
    let path = tmp.path().join("plan.toml");
    std::fs::write(&path, plan_text(&l, &g, r#""training.optimizer.lr=0.05""#)).unwrap();
    let p = Plan::load(&path).unwrap();
    assert_eq!(p.config(0, 3).unwrap().training.optimizer.lr, 0.05);
    assert_eq!(p.config(1, 3).unwrap().training.optimizer.lr, 0.1);
    // A directory that ran the old layout continues once the presets are rewritten in the new
    // one: the saved configs are compared as configs, not as text.
    let p = plan(tmp.path());
    let dir = tmp.path().join("exp");
    let mut first = Runner::new(p, &dir);
    first.progress = false;
    first.stop_after_units = Some(3);
    first.run().unwrap();
    for preset in [&l, &g] {
        let mut table: toml::Table = std::fs::read_to_string(preset).unwrap().parse().unwrap();
        let renamed = quester_train::config::migrate::migrate_table(&mut table).unwrap();
        assert!(!renamed.is_empty(), "the fixture is in the old layout");
        std::fs::write(preset, toml::to_string(&table).unwrap()).unwrap();
    }
    let rewritten = Runner::new(Plan::load(&path).unwrap(), &dir);
    rewritten.check_unchanged().unwrap();
}

/// The bandit plan with GRPO's checkpoints also evaluated as LaMer is (`evaluate_as`), and the
/// comparison of LaMer with that row.
fn plan_evaluating_grpo_as_lamer(dir: &Path) -> Plan {
    let (l, g) = write_presets(dir);
    let text = plan_text(&l, &g, "")
        .replace(
            &format!("preset = \"{}\"\n", g.display()),
            &format!("preset = \"{}\"\nevaluate_as = [\"lamer\"]\n", g.display()),
        )
        .replacen(
            "[budget]",
            "compare = [[\"lamer\", \"grpo\"], [\"lamer\", \"grpo as lamer\"]]\n[budget]",
            1,
        );
    let path = dir.join("plan.toml");
    std::fs::write(&path, &text).unwrap();
    Plan::load(&path).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// A baseline evaluated "with memory", as the papers do: GRPO's trained checkpoint goes
/// through LaMer's evaluation (its attempts see the earlier ones) as a unit of its own, kept
/// and restored like the others, aggregated as the row `grpo as lamer` against LaMer's
/// untrained row, and equal to evaluating that checkpoint with LaMer's config by hand.
#[test]
fn a_run_evaluated_as_another_is_a_unit_and_a_row_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let p = plan_evaluating_grpo_as_lamer(tmp.path());
    let keep = tmp.path().join("kept");
    let mut runner = Runner::new(p.clone(), &tmp.path().join("exp"));
    runner.progress = false;
    runner.keep = Some(keep.clone());
    let log = runner.run().unwrap();
    assert_eq!(
        log.executed[2..7],
        [
            "lamer seed 3: train",
            "lamer seed 3: eval",
            "grpo seed 3: train",
            "grpo seed 3: eval",
            "grpo seed 3: eval as lamer"
        ]
    );
    assert_eq!(log.executed.len(), 2 + 2 * 5);
    let unit = Unit::EvalAs {
        run: 1,
        seed: 3,
        like: 0,
    };
    let dir = runner.eval_dir(&unit);
    assert!(
        dir.ends_with("grpo/seed-3/eval-as-lamer"),
        "{}",
        dir.display()
    );
    // It ran with LaMer's config and GRPO's last checkpoint: evaluating that by hand gives the
    // same tasks, to the last digit.
    let lamer_cfg = p.config(0, 3).unwrap();
    let saved: toml::Table = std::fs::read_to_string(dir.join("config.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        quester_train::TrainConfig::from_table(saved).unwrap(),
        lamer_cfg
    );
    let (checkpoint, _) = quester_train::run_dir::RunDir::new(&runner.seed_dir(1, 3).join("train"))
        .latest_checkpoint()
        .unwrap()
        .unwrap();
    let by_hand = tmp.path().join("by-hand");
    quester_train::api::evaluate(&lamer_cfg, Some(&checkpoint), Some(&by_hand)).unwrap();
    let tasks = |d: &Path| std::fs::read_to_string(d.join("eval_tasks.jsonl")).unwrap();
    assert_eq!(tasks(&dir), tasks(&by_hand));
    let s = aggregate(&runner).unwrap();
    let names: Vec<&str> = s.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["lamer", "grpo", "grpo as lamer"]);
    let row = &s.runs[2];
    assert_eq!(row.evaluated_as.as_deref(), Some("lamer"));
    assert_eq!((row.method.as_str(), row.num_attempts), ("grpo", 2));
    assert_eq!(row.seeds_done, vec![3, 4]);
    assert_eq!(row.untrained, None, "its untrained row is LaMer's");
    assert_eq!(row.train_seconds, s.runs[1].train_seconds);
    // Its gain is against LaMer's untrained evaluation, on the same tasks and streams.
    let evals: Vec<_> = [3u64, 4]
        .iter()
        .map(|&seed| {
            quester_experiment::aggregate::read_eval(&runner.eval_dir(&Unit::EvalAs {
                run: 1,
                seed,
                like: 0,
            }))
            .unwrap()
        })
        .collect();
    let untrained =
        quester_experiment::aggregate::read_eval(&runner.eval_dir(&Unit::Untrained { run: 0 }))
            .unwrap();
    let pass2 = |e: &quester_experiment::aggregate::EvalFiles| -> Vec<f64> {
        e.tasks
            .iter()
            .map(|t| quester_experiment::aggregate::task_value(t, "pass@2").unwrap())
            .collect()
    };
    let cfg = BootstrapConfig::default();
    let trained_table: Vec<Vec<f64>> = evals.iter().map(pass2).collect();
    assert_eq!(
        row.gain.as_ref().unwrap()["pass@2"],
        paired_diff_ci(&trained_table, &[pass2(&untrained)], &cfg).unwrap()
    );
    let c = &s.comparisons[1];
    assert_eq!(
        (c.a.as_str(), c.b.as_str(), c.seeds),
        ("lamer", "grpo as lamer", 2)
    );
    let md = write_outputs(&s, runner.dir()).unwrap().markdown;
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("| grpo as lamer | grpo | 2/2 | 128 |"), "{md}");
    assert!(md.contains("| lamer - grpo as lamer | 2 |"), "{md}");
    assert!(md.contains("its untrained row is lamer's"), "{md}");

    // Kept, and restored on a machine that has only the keep directory.
    assert!(keep.join("grpo/seed-4/eval-as-lamer/eval.json").is_file());
    let mut fresh = Runner::new(p, &tmp.path().join("fresh"));
    fresh.progress = false;
    fresh.keep = Some(keep);
    let log = fresh.run().unwrap();
    assert!(log.executed.is_empty(), "{:?}", log.executed);
    assert!(log
        .skipped
        .contains(&"grpo seed 4: eval as lamer".to_string()));
    assert_eq!(figures(&aggregate(&fresh).unwrap()), figures(&s));
}

#[test]
fn evaluate_as_names_another_run_with_the_same_model() {
    let tmp = tempfile::tempdir().unwrap();
    let (l, g) = write_presets(tmp.path());
    let path = tmp.path().join("plan.toml");
    let with = |evaluate_as: &str, compare: &str| {
        plan_text(&l, &g, "")
            .replace(
                &format!("preset = \"{}\"\n", g.display()),
                &format!(
                    "preset = \"{}\"\nevaluate_as = [{evaluate_as}]\n",
                    g.display()
                ),
            )
            .replacen("[budget]", &format!("{compare}\n[budget]"), 1)
    };
    for (evaluate_as, compare, expected) in [
        (
            "\"ppo\"",
            "",
            "evaluate_as `ppo` is not the name of another run",
        ),
        (
            "\"grpo\"",
            "",
            "evaluate_as `grpo` is not the name of another run",
        ),
        (
            "\"lamer\"",
            "compare = [[\"lamer\", \"lamer as grpo\"]]",
            "compare: `lamer as grpo` is not the name",
        ),
    ] {
        std::fs::write(&path, with(evaluate_as, compare)).unwrap();
        let msg = Plan::load(&path).unwrap_err().to_string();
        assert!(msg.contains(expected), "{msg}");
    }
    // LaMer's policy could not load GRPO's checkpoints: another model.
    std::fs::write(&path, with("\"lamer\"", "")).unwrap();
    Plan::load(&path).unwrap();
    let text = with("\"lamer\"", "").replace(
        &format!("name = \"lamer\"\npreset = \"{}\"\nset = []", l.display()),
        &format!(
            "name = \"lamer\"\npreset = \"{}\"\nset = [\"model.max_response_tokens=7\"]",
            l.display()
        ),
    );
    std::fs::write(&path, text).unwrap();
    let msg = Plan::load(&path).unwrap_err().to_string();
    assert!(msg.contains("needs the same [model] section"), "{msg}");
}
