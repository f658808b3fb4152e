//! Rollouts sampled ahead of the updates (`rollout.max_staleness`) on a `quester serve` of the
//! tiny model: each step samples with the weights the schedule names, those weights are the
//! trainer's after that many updates, and a run stopped and resumed ends as the uninterrupted
//! one, to the last digit and byte.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use quester_serve::server::ServeConfig;
use quester_train::policy::remote::RolloutSampler;
use quester_train::policy::{GenRequest, Generation, TextCodec};
use quester_train::{TrainConfig, TrainError};
use serde_json::{Map, Value};

use crate::serve_native::tiny_server;

/// What a run's sampler was asked to do, in order.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    /// An adapter loaded under a name, with its files' bytes.
    Load(String, Vec<u8>),
    /// Generations sampled under the adapter loaded last.
    Generate(usize),
}

/// Forwards to the rollout client and records what it is asked to do.
struct Recorder {
    inner: Box<dyn RolloutSampler>,
    log: Arc<Mutex<Vec<Event>>>,
}

impl RolloutSampler for Recorder {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        let out = self.inner.generate(requests)?;
        self.log.lock().unwrap().push(Event::Generate(out.len()));
        Ok(out)
    }

    fn load_adapter(&mut self, dir: &Path, name: &str) -> Result<(), TrainError> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let bytes = files
            .iter()
            .flat_map(|f| std::fs::read(f).unwrap())
            .collect();
        self.log
            .lock()
            .unwrap()
            .push(Event::Load(name.to_string(), bytes));
        self.inner.load_adapter(dir, name)
    }
}

/// The LaMer bandit preset on the tiny model, 3 steps of 2 x 2 trials sampled on `server`
/// with TIS, a checkpoint every step, and an entropy bonus so every update moves the weights.
fn config(server: &str, staleness: usize) -> TrainConfig {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tiny = root.join("crates/quester-model/tests/fixtures/tiny-llama");
    let overrides: Vec<String> = vec![
        format!("model.path={}", tiny.display()),
        "rollout.engine=\"openai\"".into(),
        format!("rollout.servers=[\"{server}\"]"),
        format!("rollout.max_staleness={staleness}"),
        "training.steps=3".into(),
        "training.checkpoint_every=1".into(),
        "rollout.tasks_per_step=2".into(),
        "rollout.group_size=2".into(),
        "rollout.temperature=1.0".into(),
        "rollout.top_p=1.0".into(),
        "rollout.top_k=0".into(),
        "eval.at_start=false".into(),
        "eval.at_end=false".into(),
        "algorithm.loss.rollout_correction=\"tis\"".into(),
        "algorithm.loss.entropy_coef=0.01".into(),
    ];
    TrainConfig::load(&root.join("configs/lamer_bandit_cpu.toml"), &overrides).unwrap()
}

/// A sampler factory whose samplers record into `log`.
fn recording(
    log: &Arc<Mutex<Vec<Event>>>,
) -> impl Fn(&TrainConfig, Arc<dyn TextCodec>) -> Result<Box<dyn RolloutSampler>, TrainError> {
    let log = Arc::clone(log);
    move |cfg, codec| {
        Ok(Box::new(Recorder {
            inner: quester_serve::openai::rollout_sampler(cfg, codec)?,
            log: Arc::clone(&log),
        }) as Box<dyn RolloutSampler>)
    }
}

/// Trains `cfg` into `run` (resuming what is there), stopping after `stop_after` steps when
/// given.
fn train(
    cfg: &TrainConfig,
    run: &Path,
    log: &Arc<Mutex<Vec<Event>>>,
    stop_after: Option<usize>,
) -> usize {
    let mut trainer = trainer(cfg, run, log);
    trainer.stop_after = stop_after;
    trainer.run().unwrap().steps
}

/// A trainer of `cfg` in `run` (resuming what is there), its sampler recording into `log`.
fn trainer(
    cfg: &TrainConfig,
    run: &Path,
    log: &Arc<Mutex<Vec<Event>>>,
) -> quester_train::trainer::Trainer<'static> {
    let factory = recording(log);
    let policy = quester_train::api::build_training_policy(cfg, run, Some(&factory)).unwrap();
    let resume = run.join("config.resolved.toml").is_file();
    quester_train::trainer::Trainer::new(
        cfg.clone(),
        policy,
        quester_train::api::env_factory(cfg),
        run,
        resume,
    )
    .unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// The training rows without their timings.
fn rows(run: &Path) -> Vec<Map<String, Value>> {
    let mut rows = quester_train::run_dir::RunDir::new(run)
        .read_metrics()
        .unwrap();
    for row in &mut rows {
        row.retain(|k, _| !k.starts_with("time_"));
    }
    rows
}

/// The server's log-probs depend in their last bits on how it batched the requests, which
/// timing decides: the keys computed from them agree to rounding, every other key exactly.
const FROM_SERVER_LOGPROBS: [&str; 3] = ["sampler_logp_gap", "sampler_kl", "tis_weight_mean"];

fn assert_same_rows(a: &[Map<String, Value>], b: &[Map<String, Value>]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        let strip = |r: &Map<String, Value>| {
            let mut r = r.clone();
            r.retain(|k, _| !FROM_SERVER_LOGPROBS.contains(&k.as_str()));
            r
        };
        assert_eq!(strip(x), strip(y));
        for k in FROM_SERVER_LOGPROBS {
            let (p, q) = (x[k].as_f64().unwrap(), y[k].as_f64().unwrap());
            // Nats (the gap, the KL) and a ratio near 1 (the weights): rounding is far below.
            assert!((p - q).abs() <= 1e-6, "{k}: {p} vs {q}");
        }
    }
}

fn loads(log: &Arc<Mutex<Vec<Event>>>) -> Vec<(String, Vec<u8>)> {
    log.lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::Load(name, bytes) => Some((name.clone(), bytes.clone())),
            Event::Generate(_) => None,
        })
        .collect()
}

#[test]
fn rollouts_sampled_ahead_use_the_weights_the_schedule_names_and_resume_exactly() {
    let server = tiny_server(ServeConfig::default());
    let url = server.base_url();
    let tmp = tempfile::tempdir().unwrap();

    // On-policy: step s samples with the weights after s updates (policy-v1, -v2, -v3).
    let on_log = Arc::new(Mutex::new(Vec::new()));
    let on_run = tmp.path().join("on-policy");
    assert_eq!(train(&config(&url, 0), &on_run, &on_log, None), 3);
    let on = loads(&on_log);
    assert_eq!(on.len(), 3);

    // One step behind: steps 0 and 1 sample with the start's weights, step 2 with those after
    // one update, each loaded once, before the generations it samples.
    let log = Arc::new(Mutex::new(Vec::new()));
    let run = tmp.path().join("ahead");
    let cfg = config(&url, 1);
    assert_eq!(train(&cfg, &run, &log, None), 3);
    let ahead = loads(&log);
    let names: Vec<&str> = ahead.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ahead-w0", "ahead-w1"]);
    assert!(matches!(log.lock().unwrap()[0], Event::Load(..)));
    // The same weights as the on-policy run's at the same update count: step 0 trains on the
    // same trials there and here.
    assert_eq!(ahead[0].1, on[0].1, "the start's weights");
    assert_eq!(ahead[1].1, on[1].1, "the weights after one update");
    assert_ne!(ahead[0].1, ahead[1].1, "the update moved the weights");
    let got = rows(&run);
    let staleness: Vec<Option<u64>> = got
        .iter()
        .map(|r| r.get("rollout_staleness").and_then(Value::as_u64))
        .collect();
    assert_eq!(staleness, [Some(0), Some(1), Some(1)]);
    let on_rows = rows(&on_run);
    let mut first = got[0].clone();
    first.remove("rollout_staleness");
    // Step 0 is the on-policy run's step 0.
    assert_same_rows(&[first], &on_rows[..1]);
    // The lag shows in the gap between the sampler's log-probs and the trainer's: rounding
    // at step 0, an update's worth at steps 1 and 2.
    let kl: Vec<f64> = got
        .iter()
        .map(|r| r["sampler_kl"].as_f64().unwrap())
        .collect();
    assert!(kl[0] < 1e-8, "{kl:?}");
    assert!(
        kl[1] > 100.0 * kl[0].max(1e-12) && kl[2] > 100.0 * kl[0].max(1e-12),
        "{kl:?}"
    );
    for r in &got {
        assert!(r["tis_weight_mean"].as_f64().unwrap() > 0.0);
    }
    // Only the adapters of steps still due are kept: none at the end.
    let left: Vec<String> = std::fs::read_dir(run.join("adapters"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("ahead-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // Stopped after one step, then resumed in a new trainer: the checkpoint holds the start's
    // adapter for step 1, and the run ends as the uninterrupted one.
    let log2 = Arc::new(Mutex::new(Vec::new()));
    let run2 = tmp.path().join("stopped");
    assert_eq!(train(&cfg, &run2, &log2, Some(1)), 1);
    let kept = run2.join("checkpoints/step_000001/ahead");
    assert!(kept.join("ahead-w0/adapter_config.json").is_file());
    assert!(kept.join("ahead-w1/adapter_config.json").is_file());
    log2.lock().unwrap().clear();
    // A copy whose checkpoint lost those adapters refuses to resume, naming the checkpoint.
    let run3 = tmp.path().join("lost");
    copy_tree(&run2, &run3);
    std::fs::remove_dir_all(run3.join("checkpoints/step_000001/ahead")).unwrap();
    let e = trainer(&cfg, &run3, &log2).run().unwrap_err().to_string();
    assert!(
        e.contains("step_000001") && e.contains("does not hold"),
        "{e}"
    );
    assert_eq!(train(&cfg, &run2, &log2, None), 3);
    let resumed = loads(&log2);
    let names: Vec<&str> = resumed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ahead-w0", "ahead-w1"]);
    assert_eq!(resumed[0].1, ahead[0].1);
    assert_eq!(resumed[1].1, ahead[1].1);
    assert_same_rows(&rows(&run2), &got);
    assert_eq!(
        std::fs::read(run2.join("trajectories.jsonl")).unwrap(),
        std::fs::read(run.join("trajectories.jsonl")).unwrap()
    );
}
