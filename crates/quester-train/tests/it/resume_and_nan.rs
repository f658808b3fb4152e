//! Reliability: an interrupted run resumed from its checkpoint ends exactly like an
//! uninterrupted one (same metrics lines, same trajectories, same weights); a non-finite loss
//! skips the update and is logged.

use quester_train::api::{build_policy, env_factory};
use quester_train::policy::tabular::TabularPolicy;
use quester_train::policy::{
    GenRequest, Generation, LossValue, Policy, TrainSeq, TrainablePolicy, UpdateStats,
};
use quester_train::trainer::Trainer;
use quester_train::{TrainConfig, TrainError};
use serde_json::Value;
use std::path::Path;

fn cfg() -> TrainConfig {
    let mut c = crate::common::lamer_bandit(0.9, 8);
    c.training.checkpoint_every = 3;
    c.eval.every = 4;
    c.eval.tasks = 20;
    c
}

/// metrics.jsonl without the wall-clock timings.
fn metrics_without_times(dir: &Path) -> Vec<serde_json::Map<String, Value>> {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let mut m: serde_json::Map<String, Value> = serde_json::from_str(l).unwrap();
            m.retain(|k, _| !k.starts_with("time_"));
            m
        })
        .collect()
}

fn logits_of(dir: &Path) -> Vec<f64> {
    let c = cfg();
    let mut p = TabularPolicy::new(
        c.model.tabular_candidates.clone(),
        c.training.optimizer.lr,
        c.training.grad_clip,
    );
    let latest = std::fs::read_to_string(dir.join("checkpoints/latest")).unwrap();
    p.load(&dir.join("checkpoints").join(latest.trim()))
        .unwrap();
    p.logits()
}

#[test]
fn resume_after_interruption_reproduces_the_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let c = cfg();
    let full = tmp.path().join("full");
    let mut t = Trainer::new(
        c.clone(),
        build_policy(&c).unwrap(),
        env_factory(&c),
        &full,
        false,
    )
    .unwrap();
    t.run().unwrap();

    let cut = tmp.path().join("cut");
    let mut t = Trainer::new(
        c.clone(),
        build_policy(&c).unwrap(),
        env_factory(&c),
        &cut,
        false,
    )
    .unwrap();
    t.stop_after = Some(5); // "killed" after step 5: checkpoint at 3, metrics lines 4-5 extra
    t.run().unwrap();
    assert_eq!(metrics_without_times(&cut).len(), 5);
    // A checkpoint being written when the process died leaves a temporary folder behind.
    std::fs::create_dir_all(cut.join("checkpoints/.tmp_step_000006")).unwrap();
    std::fs::write(cut.join("checkpoints/.tmp_step_000006/junk"), "partial").unwrap();

    let summary = quester_train::resume(&cut).unwrap();
    assert_eq!(summary.steps, 8);
    let a = metrics_without_times(&full);
    let b = metrics_without_times(&cut);
    assert_eq!(a.len(), 8, "one line per step");
    assert_eq!(a, b, "no lost or duplicated lines, identical values");
    let steps: Vec<u64> = b.iter().map(|r| r["step"].as_u64().unwrap()).collect();
    assert_eq!(steps, (1..=8).collect::<Vec<u64>>());
    assert_eq!(
        std::fs::read_to_string(full.join("trajectories.jsonl")).unwrap(),
        std::fs::read_to_string(cut.join("trajectories.jsonl")).unwrap()
    );
    let csv_a = std::fs::read_to_string(full.join("metrics.csv")).unwrap();
    let csv_b = std::fs::read_to_string(cut.join("metrics.csv")).unwrap();
    assert_eq!(csv_a.lines().count(), 9);
    assert_eq!(csv_b.lines().count(), 9);
    assert_eq!(logits_of(&full), logits_of(&cut), "same weights at the end");
    // Resuming a finished run does nothing and keeps the logs.
    quester_train::resume(&cut).unwrap();
    assert_eq!(metrics_without_times(&cut), a);
}

#[test]
fn a_fresh_run_refuses_a_used_directory_and_resume_refuses_another_config() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = cfg();
    c.training.steps = 1;
    let dir = tmp.path().join("run");
    quester_train::train(&c, &dir, false).unwrap();
    assert!(quester_train::train(&c, &dir, false).is_err());
    let mut other = c.clone();
    other.algorithm.advantage.traj_gamma = 0.5;
    let e = quester_train::train(&other, &dir, true).unwrap_err();
    assert!(e.to_string().contains("config differs"), "{e}");
    // The checkpoint cadence is not part of what a run computes: a resume may change it.
    let mut cadence = c.clone();
    cadence.training.checkpoint_every = c.training.checkpoint_every + 1;
    cadence.training.steps = 2;
    let e = quester_train::train(&cadence, &dir, true).unwrap_err();
    assert!(
        e.to_string().contains("config differs"),
        "steps still count: {e}"
    );
    cadence.training.steps = 1;
    quester_train::train(&cadence, &dir, true).unwrap();
}

/// The config.resolved.toml an older version wrote for `text` (the new layout): every key at
/// its old flat place, and none of the keys the old layout did not have.
fn old_layout(text: &str) -> String {
    use quester_train::config::migrate::{Values, RENAMES};
    let mut t: toml::Table = text.parse().unwrap();
    let table = |t: &mut toml::Table, path: &str| -> toml::Table {
        let (sec, sub) = path.split_once('.').unwrap();
        let s = t.get_mut(sec).unwrap().as_table_mut().unwrap();
        s.remove(sub)
            .map(|v| v.as_table().unwrap().clone())
            .unwrap_or_default()
    };
    let mut moved = toml::Table::new();
    for path in [
        "algorithm.advantage",
        "algorithm.loss",
        "training.optimizer",
        "model.lora",
    ] {
        moved.insert(path.into(), toml::Value::Table(table(&mut t, path)));
    }
    moved.insert("prompt".into(), t.remove("prompt").unwrap());
    for r in RENAMES {
        let (parent, leaf) = r.new.rsplit_once('.').unwrap();
        let source = if parent == "model" {
            t.get_mut("model").unwrap().as_table_mut().unwrap()
        } else {
            moved.get_mut(parent).unwrap().as_table_mut().unwrap()
        };
        let Some(v) = source.remove(leaf) else {
            continue;
        };
        let v = match r.values {
            Values::Same => v,
            Values::Strings(map) => {
                let old = map.iter().find(|(_, n)| Some(*n) == v.as_str()).unwrap().0;
                toml::Value::String(old.into())
            }
            Values::Bool(yes, _) => toml::Value::Boolean(v.as_str() == Some(yes)),
        };
        let (sec, key) = r.old.split_once('.').unwrap();
        t.entry(sec)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .unwrap()
            .insert(key.into(), v);
    }
    // What the old layout did not have: the rest of the moved tables, and the estimator (it
    // was unset, the method's own).
    t["algorithm"].as_table_mut().unwrap().remove("estimator");
    toml::to_string_pretty(&t).unwrap()
}

#[test]
fn a_run_directory_of_the_old_layout_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let c = cfg();
    let full = tmp.path().join("full");
    quester_train::train(&c, &full, false).unwrap();
    let cut = tmp.path().join("cut");
    let mut t = Trainer::new(
        c.clone(),
        build_policy(&c).unwrap(),
        env_factory(&c),
        &cut,
        false,
    )
    .unwrap();
    t.stop_after = Some(5);
    t.run().unwrap();
    let path = cut.join("config.resolved.toml");
    let old = old_layout(&std::fs::read_to_string(&path).unwrap());
    assert!(old.contains("traj_gamma") && !old.contains("[algorithm.advantage]"));
    assert!(old.contains("lr = 0.1") && !old.contains("[training.optimizer]"));
    std::fs::write(&path, &old).unwrap();
    let summary = quester_train::resume(&cut).unwrap();
    assert_eq!(summary.steps, 8);
    assert_eq!(metrics_without_times(&full), metrics_without_times(&cut));
    assert_eq!(logits_of(&full), logits_of(&cut));
    // The saved file is left as it was.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
}

/// Wraps the tabular policy and hands the loss NaN log-probs in chosen updates, as an overflow
/// in a real model would.
struct Poisoned {
    inner: TabularPolicy,
    updates: usize,
    poison: Vec<usize>,
    unchanged: std::rc::Rc<std::cell::Cell<Option<bool>>>,
}

impl Policy for Poisoned {
    fn generate(&mut self, r: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        self.inner.generate(r)
    }
}

impl TrainablePolicy for Poisoned {
    fn score(&mut self, batch: &[TrainSeq<'_>]) -> Result<Vec<Vec<f64>>, TrainError> {
        self.inner.score(batch)
    }

    fn update(
        &mut self,
        batch: &[TrainSeq<'_>],
        loss_fn: &mut dyn FnMut(&[Vec<f64>]) -> LossValue,
        entropy_coef: f64,
    ) -> Result<UpdateStats, TrainError> {
        let poison = self.poison.contains(&self.updates);
        self.updates += 1;
        let before = self.inner.logits();
        let st = if poison {
            self.inner.update(
                batch,
                &mut |lp: &[Vec<f64>]| {
                    let bad: Vec<Vec<f64>> = lp.iter().map(|v| vec![f64::NAN; v.len()]).collect();
                    loss_fn(&bad)
                },
                entropy_coef,
            )?
        } else {
            self.inner.update(batch, loss_fn, entropy_coef)?
        };
        if poison {
            self.unchanged.set(Some(before == self.inner.logits()));
        }
        Ok(st)
    }
    fn save(&self, dir: &Path) -> Result<(), TrainError> {
        self.inner.save(dir)
    }
    fn load(&mut self, dir: &Path) -> Result<(), TrainError> {
        self.inner.load(dir)
    }
}

#[test]
fn nan_loss_skips_the_update_and_training_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = cfg();
    c.training.steps = 4;
    c.eval.every = 0;
    let flag = std::rc::Rc::new(std::cell::Cell::new(None));
    let pol = Poisoned {
        inner: TabularPolicy::new(
            c.model.tabular_candidates.clone(),
            c.training.optimizer.lr,
            0.0,
        ),
        updates: 0,
        poison: vec![1],
        unchanged: flag.clone(),
    };
    let dir = tmp.path().join("nan");
    let mut t = Trainer::new(c.clone(), Box::new(pol), env_factory(&c), &dir, false).unwrap();
    t.run().unwrap();
    assert_eq!(
        flag.get(),
        Some(true),
        "the poisoned update left the weights untouched"
    );
    let rows = t.run_dir().read_metrics().unwrap();
    let skipped: Vec<u64> = rows
        .iter()
        .map(|r| r["skipped_updates"].as_u64().unwrap())
        .collect();
    assert_eq!(
        skipped.iter().sum::<u64>(),
        1,
        "exactly the poisoned update is skipped: {skipped:?}"
    );
    for r in &rows {
        for k in ["loss", "grad_norm", "reward_mean", "eval_pass@1"] {
            if let Some(v) = r.get(k) {
                assert!(v.as_f64().unwrap().is_finite(), "{k} logged finite");
            }
        }
        assert!(
            r["updates"].as_u64().unwrap() >= 1,
            "the other mini-batches still train"
        );
    }
}

#[test]
fn evaluate_from_a_checkpoint_matches_the_final_evaluation() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = cfg();
    c.training.steps = 3;
    let dir = tmp.path().join("run");
    let summary = quester_train::train(&c, &dir, false).unwrap();
    let latest = std::fs::read_to_string(dir.join("checkpoints/latest")).unwrap();
    let ck = dir.join("checkpoints").join(latest.trim());
    let out = tmp.path().join("eval");
    let report = quester_train::evaluate(&c, Some(&ck), Some(&out)).unwrap();
    for (k, p) in report.pass_at.iter().enumerate() {
        assert_eq!(
            Some(*p),
            summary.last_metrics[&format!("eval_pass@{}", k + 1)].as_f64()
        );
    }
    assert!(out.join("eval.json").exists());
    let lines = std::fs::read_to_string(out.join("trajectories.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), c.eval.tasks);
}

#[test]
fn a_wall_time_budget_stops_with_a_checkpoint_and_stays_stopped_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let mut c = cfg();
    c.eval.every = 0;
    c.eval.at_end = false;
    // Any real step takes longer than a nanosecond: the first step spends the budget.
    c.training.max_train_seconds = 1e-9;
    let mut t = Trainer::new(
        c.clone(),
        build_policy(&c).unwrap(),
        env_factory(&c),
        &dir,
        false,
    )
    .unwrap();
    let summary = t.run().unwrap();
    assert_eq!(summary.steps, 1);
    let (_, state) = t.run_dir().latest_checkpoint().unwrap().unwrap();
    assert_eq!(
        state.step, 1,
        "the step that spent the budget is checkpointed"
    );
    drop(t);
    let mut t = Trainer::new(
        c.clone(),
        build_policy(&c).unwrap(),
        env_factory(&c),
        &dir,
        true,
    )
    .unwrap();
    assert_eq!(
        t.run().unwrap().steps,
        1,
        "a resumed run's budget counts the time spent"
    );
    assert_eq!(t.run_dir().read_metrics().unwrap().len(), 1);
}
