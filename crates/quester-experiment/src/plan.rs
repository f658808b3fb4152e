//! An experiment plan: named runs (a preset plus overrides) x seeds under one budget rule, and
//! the evaluation every run gets. Parsing checks everything a run needs (each run's config is
//! built and validated for every seed) before anything runs.

use serde::Deserialize;
use std::path::{Path, PathBuf};

use quester_train::config::migrate;
use quester_train::TrainConfig;

use crate::error::ExperimentError;

/// The plan file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    name: String,
    #[serde(default)]
    description: String,
    seeds: Vec<u64>,
    #[serde(default)]
    set: Vec<String>,
    budget: Budget,
    #[serde(default)]
    eval: toml::Table,
    #[serde(rename = "run")]
    runs: Vec<RunPlan>,
    #[serde(default)]
    compare: Vec<[String; 2]>,
    #[serde(default = "default_curves")]
    curves: Vec<String>,
    #[serde(default)]
    bootstrap: BootstrapPlan,
}

fn default_curves() -> Vec<String> {
    vec!["reward_mean".into(), "invalid_rate".into()]
}

/// The budget every run gets; exactly one key.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Scheduled episodes (attempts): each run trains `episodes / (tasks_per_step x group_size x
    /// num_attempts)` steps, which must come out whole.
    pub episodes: Option<usize>,
    /// Training steps, the same for every run.
    pub steps: Option<usize>,
    /// Wall seconds of training steps per run (the preset's `training.steps` is the cap).
    pub wall_seconds: Option<f64>,
}

/// `[bootstrap]`: how intervals are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BootstrapPlan {
    pub resamples: usize,
    pub level: f64,
    pub seed: u64,
}

impl Default for BootstrapPlan {
    fn default() -> Self {
        Self {
            resamples: 2000,
            level: 0.95,
            seed: 0,
        }
    }
}

/// One `[[run]]`: a method as a preset plus overrides.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunPlan {
    /// Names the run in the tables and its directory; letters, digits, `-` and `_`.
    pub name: String,
    /// A preset file (relative to the working directory, else to the plan's folder or the one
    /// above it).
    pub preset: String,
    /// Dotted overrides over the preset (after the plan-wide `set`).
    #[serde(default)]
    pub set: Vec<String>,
    /// Other runs whose evaluation this run's trained checkpoints also get: `["lamer"]`
    /// evaluates a baseline the way LaMer is evaluated (its prompts and attempts), as the
    /// papers evaluate their baselines "with memory". Each adds a row `<run> as <other>`.
    #[serde(default)]
    pub evaluate_as: Vec<String>,
}

/// A parsed and checked plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where it was read from (named in errors).
    pub path: String,
    /// The plan's text (copied into the experiment directory).
    pub text: String,
    pub name: String,
    pub description: String,
    pub seeds: Vec<u64>,
    pub set: Vec<String>,
    pub budget: Budget,
    /// `[eval]` minus `untrained`: keys of the configs' `[eval]` (`seed` included).
    pub eval: toml::Table,
    /// Whether every run's untrained policy is evaluated too (`eval.untrained`, default true).
    pub untrained: bool,
    pub runs: Vec<RunPlan>,
    /// Resolved preset paths, parallel to `runs`.
    pub presets: Vec<PathBuf>,
    /// Pairs (a, b) whose difference a - b is reported; default: the first run against each
    /// other one.
    pub compare: Vec<[String; 2]>,
    pub curves: Vec<String>,
    pub bootstrap: BootstrapPlan,
}

/// The evaluation seed when a plan names none: the same streams for every run and seed.
pub const DEFAULT_EVAL_SEED: u64 = 0;

impl Plan {
    /// Reads and checks a plan file.
    pub fn load(path: &Path) -> Result<Self, ExperimentError> {
        let text = std::fs::read_to_string(path).map_err(|e| ExperimentError::io(path, e))?;
        Self::parse(&text, path)
    }

    /// Parses plan text read from `path` (which anchors relative preset paths) and checks it:
    /// every run's config is built and validated for every seed.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ExperimentError> {
        let label = path.display().to_string();
        let bad = |message: String| ExperimentError::Plan {
            path: label.clone(),
            message,
        };
        let file: PlanFile = toml::from_str(text).map_err(|e| bad(e.message().to_string()))?;
        if file.name.trim().is_empty() {
            return Err(bad("name: must not be empty".into()));
        }
        if file.seeds.is_empty() {
            return Err(bad("seeds: list at least one seed".into()));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(s) = file.seeds.iter().find(|s| !seen.insert(**s)) {
            return Err(bad(format!("seeds: {s} is listed twice")));
        }
        let b = file.budget;
        let given = [
            b.episodes.is_some(),
            b.steps.is_some(),
            b.wall_seconds.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(bad(
                "budget: set exactly one of episodes, steps, wall_seconds".into(),
            ));
        }
        if b.episodes == Some(0) || b.steps == Some(0) {
            return Err(bad("budget: must be at least 1".into()));
        }
        if b.wall_seconds.is_some_and(|w| !(w.is_finite() && w > 0.0)) {
            return Err(bad("budget.wall_seconds: must be a positive number".into()));
        }
        if file.runs.is_empty() {
            return Err(bad("run: name at least one [[run]]".into()));
        }
        let mut names = std::collections::BTreeSet::new();
        for r in &file.runs {
            let ok = !r.name.is_empty()
                && r.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                return Err(bad(format!(
                    "run.name `{}`: use letters, digits, `-` and `_`",
                    r.name
                )));
            }
            if r.name == "untrained" || !names.insert(r.name.clone()) {
                return Err(bad(format!(
                    "run.name `{}`: names must be unique and not `untrained`",
                    r.name
                )));
            }
        }
        for r in &file.runs {
            for other in &r.evaluate_as {
                if other == &r.name || !names.contains(other) {
                    return Err(bad(format!(
                        "run `{}`: evaluate_as `{other}` is not the name of another run",
                        r.name
                    )));
                }
            }
        }
        // What `compare` may name: the runs, and each run evaluated as another.
        let rows: std::collections::BTreeSet<String> = names
            .iter()
            .cloned()
            .chain(file.runs.iter().flat_map(|r| {
                r.evaluate_as
                    .iter()
                    .map(move |other| evaluated_as_name(&r.name, other))
            }))
            .collect();
        let mut compare = file.compare.clone();
        if compare.is_empty() {
            compare = file.runs[1..]
                .iter()
                .map(|r| [file.runs[0].name.clone(), r.name.clone()])
                .collect();
        }
        for [a, b] in &compare {
            for n in [a, b] {
                if !rows.contains(n) {
                    return Err(bad(format!(
                        "compare: `{n}` is not the name of a run or of a run's `evaluate_as` \
                         row (`<run> as <other>`)"
                    )));
                }
            }
            if a == b {
                return Err(bad(format!(
                    "compare: [{a}, {b}] compares a run with itself"
                )));
            }
        }
        let bs = file.bootstrap;
        if bs.resamples == 0 || !(bs.level > 0.0 && bs.level < 1.0) {
            return Err(bad(
                "bootstrap: resamples >= 1 and 0 < level < 1 are required".into(),
            ));
        }
        let mut eval = file.eval.clone();
        let untrained = match eval.remove("untrained") {
            None => true,
            Some(toml::Value::Boolean(b)) => b,
            Some(v) => return Err(bad(format!("eval.untrained = {v}: must be true or false"))),
        };
        for key in ["at_start", "at_end", "every"] {
            if eval.contains_key(key) {
                return Err(bad(format!(
                    "eval.{key}: the experiment evaluates each run itself after training; \
                     remove it"
                )));
            }
        }
        eval.entry("seed")
            .or_insert(toml::Value::Integer(DEFAULT_EVAL_SEED as i64));
        let presets = file
            .runs
            .iter()
            .map(|r| {
                resolve_preset(&r.preset, path).ok_or_else(|| {
                    bad(format!(
                    "run `{}`: preset `{}` not found (relative to the working directory or the \
                     plan's folder)",
                    r.name, r.preset
                ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let plan = Self {
            path: label,
            text: text.to_string(),
            name: file.name,
            description: file.description,
            seeds: file.seeds,
            set: file.set,
            budget: b,
            eval,
            untrained,
            runs: file.runs,
            presets,
            compare,
            curves: file.curves,
            bootstrap: bs,
        };
        for i in 0..plan.runs.len() {
            for &seed in &plan.seeds {
                plan.config(i, seed)?;
            }
        }
        for (run, like) in plan.evaluations_as() {
            // The other run's policy must load this run's checkpoints.
            let (a, b) = (
                plan.config(run, plan.seeds[0])?,
                plan.config(like, plan.seeds[0])?,
            );
            if a.model != b.model {
                return Err(ExperimentError::Plan {
                    path: plan.path.clone(),
                    message: format!(
                        "run `{}`: evaluate_as `{}` needs the same [model] section in both \
                         runs (the other run's evaluation loads this run's checkpoints)",
                        plan.runs[run].name, plan.runs[like].name
                    ),
                });
            }
        }
        Ok(plan)
    }

    /// Every (run, other run) pair of the runs' `evaluate_as`, by index, in plan order.
    pub fn evaluations_as(&self) -> Vec<(usize, usize)> {
        self.runs
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.evaluate_as
                    .iter()
                    .filter_map(move |other| self.run_index(other).map(|j| (i, j)))
            })
            .collect()
    }

    /// The config run `index` trains with seed `seed`: the preset, the plan's `set`, the run's
    /// `set`, the plan's `[eval]`, then what the experiment fixes (the seed, the budget, no
    /// evaluation inside training, log lines instead of bars).
    pub fn config(&self, index: usize, seed: u64) -> Result<TrainConfig, ExperimentError> {
        let run = &self.runs[index];
        let wrap = |source: quester_train::TrainError| ExperimentError::RunConfig {
            path: self.path.clone(),
            run: run.name.clone(),
            seed,
            source: Box::new(source),
        };
        let config_err = |e: quester_config::ConfigError| wrap(e.into());
        let mut table = quester_config::read_table(&self.presets[index]).map_err(config_err)?;
        // The preset and every override are renamed to the current layout on their own, so an
        // override wins whichever layout each is written in.
        migrate::migrate_table(&mut table).map_err(wrap)?;
        migrate::apply_overrides(&mut table, &self.set).map_err(wrap)?;
        migrate::apply_overrides(&mut table, &run.set).map_err(wrap)?;
        for (key, value) in &self.eval {
            quester_config::set_dotted(&mut table, &format!("eval.{key}"), value.clone())
                .map_err(config_err)?;
        }
        let fixed: [(&str, toml::Value); 6] = [
            ("training.seed", toml::Value::Integer(seed as i64)),
            // A training step of a plan is minutes to an hour on a CPU: a killed plan resumes
            // from the step it was in, not from a cadence's last multiple.
            ("training.checkpoint_every", toml::Value::Integer(1)),
            ("eval.at_start", toml::Value::Boolean(false)),
            ("eval.at_end", toml::Value::Boolean(false)),
            ("eval.every", toml::Value::Integer(0)),
            ("output.progress", toml::Value::Boolean(false)),
        ];
        for (key, value) in fixed {
            quester_config::set_dotted(&mut table, key, value).map_err(config_err)?;
        }
        // The shape of a step, to turn an episode budget into steps.
        let shaped = TrainConfig::from_table(table.clone()).map_err(wrap)?;
        match (
            self.budget.episodes,
            self.budget.steps,
            self.budget.wall_seconds,
        ) {
            (Some(episodes), _, _) => {
                let per_step = episodes_per_step(&shaped);
                if per_step == 0 || episodes % per_step != 0 {
                    return Err(ExperimentError::Plan {
                        path: self.path.clone(),
                        message: format!(
                            "budget.episodes = {episodes} is not a whole number of run `{}`'s \
                             steps of {per_step} episodes (tasks_per_step x group_size x \
                             num_attempts)",
                            run.name
                        ),
                    });
                }
                let steps = toml::Value::Integer((episodes / per_step) as i64);
                quester_config::set_dotted(&mut table, "training.steps", steps)
                    .map_err(config_err)?;
            }
            (None, Some(steps), _) => {
                quester_config::set_dotted(
                    &mut table,
                    "training.steps",
                    toml::Value::Integer(steps as i64),
                )
                .map_err(config_err)?;
            }
            (None, None, Some(wall)) => {
                quester_config::set_dotted(
                    &mut table,
                    "training.max_train_seconds",
                    toml::Value::Float(wall),
                )
                .map_err(config_err)?;
            }
            (None, None, None) => unreachable!("checked when parsing"),
        }
        TrainConfig::from_table(table).map_err(wrap)
    }

    /// The config the untrained policy of run `index` is evaluated with (the first seed's).
    pub fn untrained_config(&self, index: usize) -> Result<TrainConfig, ExperimentError> {
        self.config(index, self.seeds[0])
    }

    /// The index of the run called `name`.
    pub fn run_index(&self, name: &str) -> Option<usize> {
        self.runs.iter().position(|r| r.name == name)
    }
}

/// The row of run `run`'s checkpoints evaluated as run `other` is: `grpo as lamer`.
pub fn evaluated_as_name(run: &str, other: &str) -> String {
    format!("{run} as {other}")
}

/// Scheduled episodes (attempts) of one training step.
pub fn episodes_per_step(cfg: &TrainConfig) -> usize {
    cfg.rollout.tasks_per_step * cfg.rollout.group_size * cfg.algorithm.num_attempts
}

fn resolve_preset(preset: &str, plan: &Path) -> Option<PathBuf> {
    let direct = PathBuf::from(preset);
    if direct.is_file() {
        return Some(direct);
    }
    let dir = plan.parent().unwrap_or(Path::new("."));
    let mut candidates = vec![dir.join(preset)];
    if let Some(up) = dir.parent() {
        candidates.push(up.join(preset));
    }
    candidates.into_iter().find(|p| p.is_file())
}
