//! The run directory: config.resolved.toml, metrics.jsonl + metrics.csv, trajectories.jsonl and
//! checkpoints/. Checkpoints are written to a temporary folder and renamed into place, then the
//! `latest` pointer is replaced atomically; each records the byte lengths of the log files, so a
//! resumed run cuts them back to that point and no line is lost or duplicated.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::TrainError;
use crate::policy::TrainablePolicy;

/// Columns of metrics.csv (metrics.jsonl holds every key; the CSV the common ones).
pub(crate) const CSV_COLUMNS: &[&str] = &[
    "step",
    "reward_mean",
    "train_pass@1",
    "train_pass@2",
    "train_pass@3",
    "invalid_rate",
    "reflect_invalid_rate",
    "prompt_len",
    "response_len",
    "samples",
    "loss",
    "grad_norm",
    "entropy",
    "kl",
    "adv_abs_mean",
    "updates",
    "skipped_updates",
    "time_rollout_s",
    "time_scoring_s",
    "time_training_s",
    "time_eval_s",
    "time_step_s",
    "eval_pass@1",
    "eval_pass@2",
    "eval_pass@3",
    "eval_reward_mean",
    "eval_invalid_rate",
];

/// What a checkpoint remembers besides the policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// Completed training steps.
    pub step: usize,
    pub metrics_jsonl_bytes: u64,
    pub metrics_csv_bytes: u64,
    pub trajectories_bytes: u64,
}

/// Paths and writers of one run.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub root: PathBuf,
}

const STATE_FILE: &str = "state.json";
/// The training method's own state (strategy banks, memories), in every checkpoint.
const METHOD_STATE_FILE: &str = "method_state.json";
/// The trainer's record of distinct outcomes per task (SGE's exploration measure, kept for
/// every method).
const OUTCOMES_FILE: &str = "outcomes.json";

/// The distinct-outcome record saved in checkpoint `dir` (empty when the checkpoint has none:
/// one written before outcomes were recorded).
pub(crate) fn load_outcomes(dir: &Path) -> Result<quester_algos::DistinctOutcomes, TrainError> {
    let p = dir.join(OUTCOMES_FILE);
    if !p.exists() {
        return Ok(quester_algos::DistinctOutcomes::new());
    }
    let text = fs::read_to_string(&p).map_err(|e| TrainError::io(&p, e))?;
    serde_json::from_str(&text)
        .map_err(|e| TrainError::Resume(format!("{} is corrupt: {e}", p.display())))
}

/// The method state saved in checkpoint `dir` (Null when the checkpoint has none: methods
/// without state, or a checkpoint written before methods had any).
pub fn load_method_state(dir: &Path) -> Result<serde_json::Value, TrainError> {
    let p = dir.join(METHOD_STATE_FILE);
    if !p.exists() {
        return Ok(serde_json::Value::Null);
    }
    let text = fs::read_to_string(&p).map_err(|e| TrainError::io(&p, e))?;
    serde_json::from_str(&text)
        .map_err(|e| TrainError::Resume(format!("{} is corrupt: {e}", p.display())))
}
const LATEST: &str = "latest";

fn io<T>(path: &Path, r: std::io::Result<T>) -> Result<T, TrainError> {
    r.map_err(|e| TrainError::io(path, e))
}

impl RunDir {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
        }
    }
    /// The run directory itself.
    pub fn path(&self) -> &Path {
        &self.root
    }
    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.resolved.toml")
    }
    pub fn metrics_jsonl(&self) -> PathBuf {
        self.root.join("metrics.jsonl")
    }
    pub(crate) fn metrics_csv(&self) -> PathBuf {
        self.root.join("metrics.csv")
    }
    pub(crate) fn trajectories(&self) -> PathBuf {
        self.root.join("trajectories.jsonl")
    }
    pub(crate) fn checkpoints(&self) -> PathBuf {
        self.root.join("checkpoints")
    }

    /// Opens the run for `cfg`: a fresh one (`resume` false) is created; a resumed one must have
    /// been started with `cfg`, and its logs are cut back to its newest checkpoint, which is
    /// returned for the caller to load (none yet: the logs start over).
    pub(crate) fn open(
        &self,
        cfg: &crate::TrainConfig,
        resume: bool,
    ) -> Result<Option<(PathBuf, CheckpointState)>, TrainError> {
        if !resume {
            self.create(&cfg.to_toml()?)?;
            return Ok(None);
        }
        if !self.config_path().exists() {
            return Err(TrainError::Resume(format!(
                "{} holds no run to resume",
                self.root.display()
            )));
        }
        let saved = io(&self.config_path(), fs::read_to_string(self.config_path()))?;
        if !cfg.matches_saved(&saved)? {
            return Err(TrainError::Resume(format!(
                "the config differs from {}; resume with the run's own config",
                self.config_path().display()
            )));
        }
        let latest = self.latest_checkpoint()?;
        match &latest {
            Some((_, state)) => self.truncate_to(state)?,
            None => {
                self.truncate_to(&CheckpointState {
                    step: 0,
                    metrics_jsonl_bytes: 0,
                    metrics_csv_bytes: 0,
                    trajectories_bytes: 0,
                })?;
                let header = format!("{}\n", CSV_COLUMNS.join(","));
                io(&self.metrics_csv(), fs::write(self.metrics_csv(), header))?;
            }
        }
        Ok(latest)
    }

    /// Starts a fresh run: refuses a directory that already holds metrics or checkpoints.
    pub(crate) fn create(&self, config_toml: &str) -> Result<(), TrainError> {
        let used = self.metrics_jsonl().exists() || self.checkpoints().join(LATEST).exists();
        if used {
            return Err(TrainError::Config(format!(
                "run dir {} already holds a run; resume it or choose a new directory",
                self.root.display()
            )));
        }
        io(&self.checkpoints(), fs::create_dir_all(self.checkpoints()))?;
        io(
            &self.config_path(),
            fs::write(self.config_path(), config_toml),
        )?;
        io(&self.metrics_jsonl(), fs::write(self.metrics_jsonl(), ""))?;
        let header = format!("{}\n", CSV_COLUMNS.join(","));
        io(&self.metrics_csv(), fs::write(self.metrics_csv(), header))?;
        io(&self.trajectories(), fs::write(self.trajectories(), ""))?;
        Ok(())
    }

    fn append(path: &Path, text: &str) -> Result<(), TrainError> {
        let mut f = io(
            path,
            OpenOptions::new().create(true).append(true).open(path),
        )?;
        io(path, f.write_all(text.as_bytes()))?;
        io(path, f.flush())
    }

    /// Appends one metrics row to metrics.jsonl and metrics.csv.
    pub(crate) fn append_metrics(&self, row: &Map<String, Value>) -> Result<(), TrainError> {
        let json = serde_json::to_string(row).map_err(|e| TrainError::Policy(e.to_string()))?;
        Self::append(&self.metrics_jsonl(), &format!("{json}\n"))?;
        let cells: Vec<String> = CSV_COLUMNS
            .iter()
            .map(|c| match row.get(*c) {
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::String(s)) => s.replace(',', ";"),
                Some(Value::Bool(b)) => b.to_string(),
                _ => String::new(),
            })
            .collect();
        Self::append(&self.metrics_csv(), &format!("{}\n", cells.join(",")))
    }

    /// Appends trajectory rows.
    pub(crate) fn append_trajectories(&self, rows: &[Value]) -> Result<(), TrainError> {
        let mut text = String::new();
        for r in rows {
            text.push_str(
                &serde_json::to_string(r).map_err(|e| TrainError::Policy(e.to_string()))?,
            );
            text.push('\n');
        }
        Self::append(&self.trajectories(), &text)
    }

    /// Every metrics row written so far.
    /// The summed wall time of the training steps logged so far (evaluation-only rows left
    /// out): what a wall-time budget has spent, over every process of a resumed run.
    pub fn train_seconds(&self) -> Result<f64, TrainError> {
        Ok(self
            .read_metrics()?
            .iter()
            .filter(|r| r.get("kind").and_then(Value::as_str) != Some("eval"))
            .filter_map(|r| r.get("time_step_s").and_then(Value::as_f64))
            .sum())
    }

    pub fn read_metrics(&self) -> Result<Vec<Map<String, Value>>, TrainError> {
        let path = self.metrics_jsonl();
        let text = io(&path, fs::read_to_string(&path))?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).map_err(|e| TrainError::Corrupt {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })
            })
            .collect()
    }

    fn len(path: &Path) -> Result<u64, TrainError> {
        Ok(io(path, fs::metadata(path))?.len())
    }

    /// Writes a checkpoint of `policy` after `step` completed steps, atomically, and keeps the
    /// newest `keep` checkpoints. `folders` (a name and a flat folder each) are copied into it
    /// under `subdir/name`: the adapters of rollouts sampled ahead.
    pub(crate) fn save_checkpoint(
        &self,
        step: usize,
        policy: &dyn TrainablePolicy,
        method_state: &serde_json::Value,
        outcomes: &quester_algos::DistinctOutcomes,
        keep: usize,
        folders: (&str, &[(String, PathBuf)]),
    ) -> Result<PathBuf, TrainError> {
        let state = CheckpointState {
            step,
            metrics_jsonl_bytes: Self::len(&self.metrics_jsonl())?,
            metrics_csv_bytes: Self::len(&self.metrics_csv())?,
            trajectories_bytes: Self::len(&self.trajectories())?,
        };
        let name = format!("step_{step:06}");
        let tmp = self.checkpoints().join(format!(".tmp_{name}"));
        let fin = self.checkpoints().join(&name);
        remove_dir_if_present(&tmp)?;
        io(&tmp, fs::create_dir_all(&tmp))?;
        policy.save(&tmp)?;
        if !method_state.is_null() {
            let mp = tmp.join(METHOD_STATE_FILE);
            let text = serde_json::to_string(method_state)
                .map_err(|e| TrainError::Policy(e.to_string()))?;
            let mut f = io(&mp, File::create(&mp))?;
            io(&mp, f.write_all(text.as_bytes()))?;
            io(&mp, f.sync_all())?;
        }
        let op = tmp.join(OUTCOMES_FILE);
        let text =
            serde_json::to_string(outcomes).map_err(|e| TrainError::Policy(e.to_string()))?;
        let mut f = io(&op, File::create(&op))?;
        io(&op, f.write_all(text.as_bytes()))?;
        io(&op, f.sync_all())?;
        for (name, from) in folders.1 {
            copy_flat(from, &tmp.join(folders.0).join(name))?;
        }
        let sp = tmp.join(STATE_FILE);
        let text =
            serde_json::to_string_pretty(&state).map_err(|e| TrainError::Policy(e.to_string()))?;
        let mut f = io(&sp, File::create(&sp))?;
        io(&sp, f.write_all(text.as_bytes()))?;
        io(&sp, f.sync_all())?;
        remove_dir_if_present(&fin)?;
        io(&fin, fs::rename(&tmp, &fin))?;
        let latest_tmp = self.checkpoints().join(".latest.tmp");
        let mut f = io(&latest_tmp, File::create(&latest_tmp))?;
        io(&latest_tmp, f.write_all(name.as_bytes()))?;
        io(&latest_tmp, f.sync_all())?;
        let latest = self.checkpoints().join(LATEST);
        io(&latest, fs::rename(&latest_tmp, &latest))?;
        self.prune(keep.max(1))?;
        Ok(fin)
    }

    fn prune(&self, keep: usize) -> Result<(), TrainError> {
        let dir = self.checkpoints();
        let mut names: Vec<String> = io(&dir, fs::read_dir(&dir))?
            .filter_map(std::result::Result::ok)
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with("step_"))
            .collect();
        names.sort();
        let drop = names.len().saturating_sub(keep);
        for n in &names[..drop] {
            let p = dir.join(n);
            io(&p, fs::remove_dir_all(&p))?;
        }
        Ok(())
    }

    /// The newest checkpoint folder and its state, if any.
    pub fn latest_checkpoint(&self) -> Result<Option<(PathBuf, CheckpointState)>, TrainError> {
        let latest = self.checkpoints().join(LATEST);
        if !latest.exists() {
            return Ok(None);
        }
        let name = io(&latest, fs::read_to_string(&latest))?;
        let dir = self.checkpoints().join(name.trim());
        let sp = dir.join(STATE_FILE);
        let text = io(&sp, fs::read_to_string(&sp))?;
        let state: CheckpointState =
            serde_json::from_str(&text).map_err(|e| TrainError::Corrupt {
                path: sp.display().to_string(),
                message: e.to_string(),
            })?;
        Ok(Some((dir, state)))
    }

    /// Cuts the log files back to the lengths a checkpoint recorded (rows written after it are
    /// produced again, identically, by the resumed run).
    pub(crate) fn truncate_to(&self, state: &CheckpointState) -> Result<(), TrainError> {
        for (path, len) in [
            (self.metrics_jsonl(), state.metrics_jsonl_bytes),
            (self.metrics_csv(), state.metrics_csv_bytes),
            (self.trajectories(), state.trajectories_bytes),
        ] {
            let f = io(&path, OpenOptions::new().write(true).open(&path))?;
            let now = io(&path, f.metadata())?.len();
            if now < len {
                return Err(TrainError::Resume(format!(
                    "{} is shorter ({now} bytes) than its checkpoint says ({len})",
                    path.display()
                )));
            }
            io(&path, f.set_len(len))?;
        }
        Ok(())
    }
}

/// Removes `dir` with everything in it, when it exists: what a stopped process left there may
/// be half-written, so it is written afresh.
pub(crate) fn remove_dir_if_present(dir: &Path) -> Result<(), TrainError> {
    if dir.exists() {
        io(dir, fs::remove_dir_all(dir))?;
    }
    Ok(())
}

/// Copies the files of folder `from` into a new folder `to`, each synced.
pub(crate) fn copy_flat(from: &Path, to: &Path) -> Result<(), TrainError> {
    io(to, fs::create_dir_all(to))?;
    for entry in io(from, fs::read_dir(from))? {
        let entry = io(from, entry)?;
        let src = entry.path();
        if src.is_file() {
            let dst = to.join(entry.file_name());
            io(&dst, fs::copy(&src, &dst))?;
            io(&dst, File::open(&dst).and_then(|f| f.sync_all()))?;
        }
    }
    Ok(())
}
