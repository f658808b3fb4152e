//! Runs a plan's units one after another into one directory. Every unit is a normal resumable
//! run or an evaluation written atomically, and a finished unit leaves a marker, so a killed
//! experiment started again skips what is done, resumes the unit it was in from its last
//! checkpoint, and loses nothing.
//!
//! Layout of the experiment directory:
//!
//! ```text
//! plan.toml                        the plan as last started
//! <run>/untrained/eval/            the untrained policy's evaluation (eval.json, eval_tasks.jsonl)
//! <run>/seed-<s>/train/            the training run (config, metrics, checkpoints, trajectories)
//! <run>/seed-<s>/trained.json      marker: training finished (steps, seconds)
//! <run>/seed-<s>/eval/             the trained policy's evaluation
//! <run>/seed-<s>/eval-as-<other>/  the same checkpoint evaluated as run <other> is
//! results.md, summary.json, plots/, report.html   the aggregate (rewritten after every unit)
//! ```
//!
//! A keep directory ([`Runner::keep`]) outlives the experiment directory: every finished
//! evaluation is copied there with the small files of the training run it evaluated (marker,
//! config, metrics; no checkpoints), in the same layout. A fresh machine that has only the keep
//! directory (committed, or on durable storage) restores those units instead of running them
//! again. Trajectories are kept gzipped (`trajectories.jsonl.gz`). A training run is kept only together with its evaluation, since without its
//! checkpoint it could not be evaluated.

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

use quester_train::run_dir::RunDir;
use quester_train::{api, TrainConfig};

use crate::error::ExperimentError;
use crate::plan::{episodes_per_step, Plan};

/// One piece of work of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// Evaluate run `run`'s untrained policy.
    Untrained { run: usize },
    /// Train run `run` with seed `seed`.
    Train { run: usize, seed: u64 },
    /// Evaluate the trained policy of run `run`, seed `seed`.
    Eval { run: usize, seed: u64 },
    /// Evaluate the trained policy of run `run`, seed `seed`, with the config of run `like`
    /// (the run's `evaluate_as`).
    EvalAs { run: usize, seed: u64, like: usize },
}

/// The config an evaluation ran with, saved beside its results.
pub const EVAL_CONFIG: &str = "config.toml";

/// The marker a finished training unit leaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trained {
    pub steps: usize,
    /// Summed wall time of the training steps (over every process of a resumed run).
    pub train_seconds: f64,
    pub episodes_per_step: usize,
    /// Whether the wall-time budget ended training before `training.steps`.
    pub out_of_time: bool,
}

/// What one call of [`Runner::run`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunLog {
    /// Units run (or continued) in this call, by label.
    pub executed: Vec<String>,
    /// Units found finished and skipped.
    pub skipped: Vec<String>,
    /// Whether the call stopped early (a test's simulated kill).
    pub interrupted: bool,
}

/// Executes a plan in a directory.
pub struct Runner {
    plan: Plan,
    dir: PathBuf,
    /// Show a progress bar on a terminal (log lines are written either way).
    pub progress: bool,
    /// Stop after this many executed units (tests simulate a kill between units).
    pub stop_after_units: Option<usize>,
    /// Stop each training unit after this many steps in this call (a kill inside a unit).
    pub stop_after_steps: Option<usize>,
    /// Where finished units are also kept, and restored from (see the module's doc).
    pub keep: Option<PathBuf>,
    /// The rollout client of runs with `rollout.engine = "openai"` (the quester binary's);
    /// evaluations stay on the native engine.
    pub sampler: Option<quester_train::SamplerFactory<'static>>,
}

/// The files of an evaluation directory a keep directory holds (`trajectories.jsonl` when the
/// evaluation wrote one).
const EVAL_FILES: [&str; 3] = ["eval.json", api::EVAL_TASKS_FILE, EVAL_CONFIG];
const EVAL_TRAJECTORIES: &str = "trajectories.jsonl";
/// The training run's CSV metrics, kept beside the JSON ones when present.
const METRICS_CSV: &str = "metrics.csv";

impl Runner {
    pub fn new(plan: Plan, dir: &Path) -> Self {
        Self {
            plan,
            dir: dir.to_path_buf(),
            progress: true,
            stop_after_units: None,
            stop_after_steps: None,
            keep: None,
            sampler: None,
        }
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The units in execution order: the untrained evaluations first, then seed by seed every
    /// run's training and evaluations (so a partly finished experiment compares every method on
    /// its first seeds).
    pub fn units(&self) -> Vec<Unit> {
        let p = &self.plan;
        let mut units = Vec::new();
        if p.untrained {
            units.extend((0..p.runs.len()).map(|run| Unit::Untrained { run }));
        }
        for &seed in &p.seeds {
            for run in 0..p.runs.len() {
                units.push(Unit::Train { run, seed });
                units.push(Unit::Eval { run, seed });
                for (r, like) in p.evaluations_as() {
                    if r == run {
                        units.push(Unit::EvalAs { run, seed, like });
                    }
                }
            }
        }
        units
    }

    /// A unit's name in logs: `lamer seed 1: train`.
    pub fn label(&self, unit: &Unit) -> String {
        let name = |run: &usize| self.plan.runs[*run].name.as_str();
        match unit {
            Unit::Untrained { run } => format!("{} untrained: eval", name(run)),
            Unit::Train { run, seed } => format!("{} seed {seed}: train", name(run)),
            Unit::Eval { run, seed } => format!("{} seed {seed}: eval", name(run)),
            Unit::EvalAs { run, seed, like } => {
                format!("{} seed {seed}: eval as {}", name(run), name(like))
            }
        }
    }

    /// The directory of run `run` with seed `seed`.
    pub fn seed_dir(&self, run: usize, seed: u64) -> PathBuf {
        self.dir.join(self.seed_rel(run, seed))
    }

    fn seed_rel(&self, run: usize, seed: u64) -> PathBuf {
        Path::new(&self.plan.runs[run].name).join(format!("seed-{seed}"))
    }

    /// Where a unit's evaluation lands (for `Eval` and `Untrained`).
    pub fn eval_dir(&self, unit: &Unit) -> PathBuf {
        self.dir.join(self.eval_rel(unit))
    }

    fn eval_rel(&self, unit: &Unit) -> PathBuf {
        match unit {
            Unit::Untrained { run } => Path::new(&self.plan.runs[*run].name)
                .join("untrained")
                .join("eval"),
            Unit::Train { run, seed } | Unit::Eval { run, seed } => {
                self.seed_rel(*run, *seed).join("eval")
            }
            Unit::EvalAs { run, seed, like } => self
                .seed_rel(*run, *seed)
                .join(format!("eval-as-{}", self.plan.runs[*like].name)),
        }
    }

    /// The files a keep directory holds for a finished unit, relative to the experiment
    /// directory, each with whether it must be there. A training unit has none of its own: it
    /// is kept with its evaluation.
    fn kept_files(&self, unit: &Unit) -> Vec<(PathBuf, bool)> {
        let (Unit::Untrained { .. } | Unit::Eval { .. } | Unit::EvalAs { .. }) = unit else {
            return Vec::new();
        };
        let eval = self.eval_rel(unit);
        let mut files: Vec<(PathBuf, bool)> = EVAL_FILES
            .iter()
            .map(|f| (eval.join(f), true))
            .chain([(eval.join(EVAL_TRAJECTORIES), false)])
            .collect();
        if let Unit::Eval { run, seed } = *unit {
            // The training run's config (for the config check) and its metrics (the curves).
            let seed_rel = self.seed_rel(run, seed);
            let train = RunDir::new(&seed_rel.join("train"));
            files.extend([
                (seed_rel.join("trained.json"), true),
                (train.config_path(), true),
                (train.metrics_jsonl(), true),
                (train.path().join(METRICS_CSV), false),
            ]);
        }
        files
    }

    /// Whether the keep directory holds every required file of a finished unit.
    pub fn is_kept(&self, unit: &Unit) -> bool {
        let Some(keep) = &self.keep else {
            return false;
        };
        let files = self.kept_files(unit);
        !files.is_empty()
            && files
                .iter()
                .all(|(rel, required)| !required || kept_at(keep, rel).is_file())
    }

    /// Copies the kept units that the experiment directory lacks back into it (an evaluation
    /// with its training run's marker, config and metrics); returns their labels.
    pub fn restore_kept(&self) -> Result<Vec<String>, ExperimentError> {
        let Some(keep) = &self.keep else {
            return Ok(Vec::new());
        };
        let mut restored = Vec::new();
        for unit in self.units() {
            if self.is_done(&unit) || !self.is_kept(&unit) {
                continue;
            }
            for (rel, _) in self.kept_files(&unit) {
                let from = kept_at(keep, &rel);
                if from.is_file() {
                    let how = if gzipped(&rel) {
                        How::Gunzip
                    } else {
                        How::Plain
                    };
                    copy_atomic(&from, &self.dir.join(&rel), how)?;
                }
            }
            if let Unit::Eval { run, seed } = unit {
                restored.push(self.label(&Unit::Train { run, seed }));
            }
            restored.push(self.label(&unit));
        }
        if !restored.is_empty() {
            tracing::info!(
                "experiment {}: restored {} finished units from {}",
                self.plan.name,
                restored.len(),
                keep.display()
            );
        }
        Ok(restored)
    }

    /// Copies a finished unit's kept files into the keep directory.
    fn keep_unit(&self, unit: &Unit) -> Result<(), ExperimentError> {
        let Some(keep) = &self.keep else {
            return Ok(());
        };
        for (rel, required) in self.kept_files(unit) {
            let from = self.dir.join(&rel);
            if from.is_file() {
                let how = if gzipped(&rel) { How::Gzip } else { How::Plain };
                copy_atomic(&from, &kept_at(keep, &rel), how)?;
            } else if required {
                return Err(ExperimentError::results(
                    &from,
                    "missing from a finished unit",
                ));
            }
        }
        Ok(())
    }

    fn trained_marker(&self, run: usize, seed: u64) -> PathBuf {
        self.seed_dir(run, seed).join("trained.json")
    }

    /// Whether a unit has finished (its marker or its evaluation files exist).
    pub fn is_done(&self, unit: &Unit) -> bool {
        match unit {
            Unit::Train { run, seed } => self.trained_marker(*run, *seed).is_file(),
            _ => {
                let d = self.eval_dir(unit);
                d.join("eval.json").is_file() && d.join(api::EVAL_TASKS_FILE).is_file()
            }
        }
    }

    /// A unit's scheduled episodes (training: steps x episodes per step; evaluation: tasks x
    /// samples x attempts), for the ETA.
    fn episodes(&self, unit: &Unit) -> f64 {
        let cfg = |run: usize| self.plan.config(run, self.plan.seeds[0]).ok();
        match unit {
            Unit::Untrained { run } | Unit::Eval { run, .. } | Unit::EvalAs { like: run, .. } => {
                cfg(*run).map_or(1.0, |c| {
                    (c.eval.tasks * c.eval.samples_per_task.max(1) * c.eval.num_attempts) as f64
                })
            }
            Unit::Train { run, .. } => {
                cfg(*run).map_or(1.0, |c| (c.training.steps * episodes_per_step(&c)) as f64)
            }
        }
    }

    /// The config a unit ran with, as saved in the directory (None when it has not started).
    fn saved_config(&self, unit: &Unit) -> Result<Option<(PathBuf, String)>, ExperimentError> {
        let path = match unit {
            Unit::Untrained { .. } | Unit::EvalAs { .. } => self.eval_dir(unit).join(EVAL_CONFIG),
            Unit::Train { run, seed } | Unit::Eval { run, seed } => {
                RunDir::new(&self.seed_dir(*run, *seed).join("train")).config_path()
            }
        };
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|e| ExperimentError::io(&path, e))?;
        Ok(Some((path, text)))
    }

    /// Refuses a directory whose units ran with other configs than the plan's now (a changed
    /// budget, preset or override): their results would otherwise be reused as if current.
    pub fn check_unchanged(&self) -> Result<(), ExperimentError> {
        for unit in self.units() {
            let Some((path, saved)) = self.saved_config(&unit)? else {
                continue;
            };
            // Compared as configs, not as text: a file written before a key was renamed
            // loads (through the migration) to the same config it ran with.
            let old = saved
                .parse::<toml::Table>()
                .map_err(|e| e.to_string())
                .and_then(|t| TrainConfig::from_table(t).map_err(|e| e.to_string()));
            let changed = |why: String| {
                ExperimentError::results(
                    &path,
                    format!(
                        "{} ran with another config than the plan gives now ({why}); use \
                         another --dir, or delete {} to run it again",
                        self.label(&unit),
                        path.parent().unwrap_or(&path).display()
                    ),
                )
            };
            let old = old.map_err(|e| changed(format!("its saved config no longer loads: {e}")))?;
            let mut now = match unit {
                Unit::Untrained { run } => self.plan.untrained_config(run)?,
                Unit::Train { run, seed } | Unit::Eval { run, seed } => {
                    self.plan.config(run, seed)?
                }
                Unit::EvalAs { seed, like, .. } => self.plan.config(like, seed)?,
            };
            // How often a run saves does not touch its results.
            now.training.checkpoint_every = old.training.checkpoint_every;
            if let Unit::Untrained { .. } = unit {
                // The training budget does not touch an untrained evaluation.
                now.training.steps = old.training.steps;
                now.training.max_train_seconds = old.training.max_train_seconds;
            }
            if now != old {
                return Err(changed("the plan or a preset changed".into()));
            }
        }
        Ok(())
    }

    /// Runs every unit not yet done, in order.
    pub fn run(&mut self) -> Result<RunLog, ExperimentError> {
        self.restore_kept()?;
        self.check_unchanged()?;
        // Units finished before a keep directory was named are kept now.
        for unit in self.units() {
            if self.keep.is_some() && self.is_done(&unit) && !self.is_kept(&unit) {
                self.keep_unit(&unit)?;
            }
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| ExperimentError::io(&self.dir, e))?;
        let plan_copy = self.dir.join("plan.toml");
        std::fs::write(&plan_copy, &self.plan.text)
            .map_err(|e| ExperimentError::io(&plan_copy, e))?;
        let units = self.units();
        let todo: Vec<bool> = units.iter().map(|u| !self.is_done(u)).collect();
        let episodes: Vec<f64> = units.iter().map(|u| self.episodes(u)).collect();
        let is_train = |u: &Unit| matches!(u, Unit::Train { .. });
        let left = |kind_train: bool, from: usize| -> f64 {
            (from..units.len())
                .filter(|&j| todo[j] && is_train(&units[j]) == kind_train)
                .map(|j| episodes[j])
                .sum()
        };
        let bar = if self.progress {
            let pb = ProgressBar::new(units.len() as u64);
            pb.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} units  {elapsed}  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            pb.set_position(todo.iter().filter(|t| !**t).count() as u64);
            pb
        } else {
            ProgressBar::hidden()
        };
        let mut eta = crate::eta::Eta::default();
        let mut log = RunLog::default();
        for (i, unit) in units.iter().enumerate() {
            let label = self.label(unit);
            if !todo[i] {
                log.skipped.push(label);
                continue;
            }
            if self
                .stop_after_units
                .is_some_and(|n| log.executed.len() >= n)
            {
                log.interrupted = true;
                break;
            }
            let eta_text = eta
                .remaining(left(true, i), left(false, i))
                .map_or(String::new(), |s| format!(", ETA {}", fmt_duration(s)));
            tracing::info!(
                "experiment {}: [{}/{}] {label}{eta_text}",
                self.plan.name,
                i + 1,
                units.len()
            );
            bar.set_message(format!("{label}{eta_text}"));
            let t = Instant::now();
            let finished = self.execute(unit)?;
            log.executed.push(label);
            if !finished {
                log.interrupted = true;
                break;
            }
            self.keep_unit(unit)?;
            eta.record(is_train(unit), episodes[i], t.elapsed().as_secs_f64());
            bar.inc(1);
        }
        bar.finish_and_clear();
        Ok(log)
    }

    /// Runs one unit; false when it stopped before finishing (a simulated kill).
    fn execute(&self, unit: &Unit) -> Result<bool, ExperimentError> {
        let label = self.label(unit);
        let wrap = |source: quester_train::TrainError| ExperimentError::Unit {
            unit: label.clone(),
            source: Box::new(source),
        };
        match *unit {
            Unit::Untrained { run } => {
                let cfg = self.plan.untrained_config(run)?;
                self.evaluate(&cfg, None, &self.eval_dir(unit))
                    .map_err(wrap)?;
                Ok(true)
            }
            Unit::Eval { run, seed } | Unit::EvalAs { run, seed, .. } => {
                let like = match *unit {
                    Unit::EvalAs { like, .. } => like,
                    _ => run,
                };
                let cfg = self.plan.config(like, seed)?;
                let train = RunDir::new(&self.seed_dir(run, seed).join("train"));
                let (checkpoint, _) =
                    train.latest_checkpoint().map_err(wrap)?.ok_or_else(|| {
                        ExperimentError::results(
                            train.path(),
                            format!(
                                "{label} needs this run's last checkpoint, and there is none \
                                 (a run restored from a keep directory has none: delete its \
                                 kept seed folder to train it again)"
                            ),
                        )
                    })?;
                self.evaluate(&cfg, Some(&checkpoint), &self.eval_dir(unit))
                    .map_err(wrap)?;
                Ok(true)
            }
            Unit::Train { run, seed } => {
                let cfg = self.plan.config(run, seed)?;
                let dir = self.seed_dir(run, seed).join("train");
                let resume = RunDir::new(&dir).config_path().is_file();
                let factory = api::env_factory(&cfg);
                factory(&toml::Table::new()).map_err(|e| wrap(e.into()))?;
                let policy = api::build_training_policy(&cfg, &dir, self.sampler).map_err(wrap)?;
                let mut trainer = quester_train::trainer::Trainer::new(
                    cfg.clone(),
                    policy,
                    factory,
                    &dir,
                    resume,
                )
                .map_err(wrap)?;
                trainer.stop_after = self.stop_after_steps;
                let summary = trainer.run().map_err(wrap)?;
                let train_seconds = trainer.run_dir().train_seconds().map_err(wrap)?;
                let budget = cfg.training.max_train_seconds;
                let out_of_time = budget > 0.0 && train_seconds >= budget;
                if summary.steps < cfg.training.steps && !out_of_time {
                    return Ok(false);
                }
                let marker = Trained {
                    steps: summary.steps,
                    train_seconds,
                    episodes_per_step: episodes_per_step(&cfg),
                    out_of_time,
                };
                write_json_atomic(&self.trained_marker(run, seed), &marker)?;
                Ok(true)
            }
        }
    }

    /// Evaluates into `out` atomically: a partial folder, renamed when complete.
    fn evaluate(
        &self,
        cfg: &TrainConfig,
        checkpoint: Option<&Path>,
        out: &Path,
    ) -> Result<(), quester_train::TrainError> {
        let partial = out.with_extension("partial");
        if partial.exists() {
            std::fs::remove_dir_all(&partial)
                .map_err(|e| quester_train::TrainError::io(&partial, e))?;
        }
        api::evaluate(cfg, checkpoint, Some(&partial))?;
        let config = partial.join(EVAL_CONFIG);
        std::fs::write(&config, cfg.to_toml()?)
            .map_err(|e| quester_train::TrainError::io(&config, e))?;
        if out.exists() {
            std::fs::remove_dir_all(out).map_err(|e| quester_train::TrainError::io(out, e))?;
        }
        std::fs::rename(&partial, out).map_err(|e| quester_train::TrainError::io(out, e))
    }
}

/// Writes JSON to `path` through a temporary file and a rename.
pub(crate) fn write_json_atomic<T: Serialize>(
    path: &Path,
    value: &T,
) -> Result<(), ExperimentError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| ExperimentError::results(path, e.to_string()))?;
    write_atomic(path, text.as_bytes())
}

/// Writes bytes to `path` through a temporary file and a rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ExperimentError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ExperimentError::io(parent, e))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| ExperimentError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| ExperimentError::io(path, e))
}

/// Whether a kept file is stored gzipped: trajectories repeat their prompts, and shrink about
/// 40x (850 KB to 21 KB for 64 MineSweeper boards x 3 attempts).
fn gzipped(rel: &Path) -> bool {
    rel.file_name()
        .is_some_and(|name| name == std::ffi::OsStr::new(EVAL_TRAJECTORIES))
}

/// Where the keep directory holds `rel`.
fn kept_at(keep: &Path, rel: &Path) -> PathBuf {
    let path = keep.join(rel);
    if !gzipped(rel) {
        return path;
    }
    let mut name = path.into_os_string();
    name.push(".gz");
    PathBuf::from(name)
}

/// How [`copy_atomic`] copies.
#[derive(Clone, Copy)]
enum How {
    Plain,
    Gzip,
    Gunzip,
}

/// Copies a file to `to` through a temporary file and a rename.
fn copy_atomic(from: &Path, to: &Path, how: How) -> Result<(), ExperimentError> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ExperimentError::io(parent, e))?;
    }
    let mut tmp = to.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let copied = (|| -> std::io::Result<()> {
        let mut input = std::io::BufReader::new(std::fs::File::open(from)?);
        let output = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        match how {
            How::Plain => {
                let mut output = output;
                std::io::copy(&mut input, &mut output)?;
                output
                    .into_inner()
                    .map_err(std::io::IntoInnerError::into_error)?
                    .sync_all()
            }
            How::Gzip => {
                let mut gz = flate2::write::GzEncoder::new(output, flate2::Compression::default());
                std::io::copy(&mut input, &mut gz)?;
                gz.finish()?
                    .into_inner()
                    .map_err(std::io::IntoInnerError::into_error)?
                    .sync_all()
            }
            How::Gunzip => {
                let mut output = output;
                std::io::copy(&mut flate2::read::GzDecoder::new(input), &mut output)?;
                output
                    .into_inner()
                    .map_err(std::io::IntoInnerError::into_error)?
                    .sync_all()
            }
        }
    })();
    copied.map_err(|e| ExperimentError::io(from, e))?;
    std::fs::rename(&tmp, to).map_err(|e| ExperimentError::io(to, e))
}

/// `1 h 02 min`, `12 min 05 s`, `40 s`.
pub fn fmt_duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}
