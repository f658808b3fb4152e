//! From the finished units of an experiment to its summary: per run the mean and bootstrap
//! interval (over seeds and tasks) of pass@1..k, reward and invalid rate, trained and untrained;
//! paired differences between runs on the same tasks; learning curves over seeds.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

use quester_algos::{mean_ci, paired_diff_ci, BootstrapConfig, Interval};
use quester_train::api::EVAL_TASKS_FILE;
use quester_train::run_dir::RunDir;
use quester_train::trainer::TaskOutcome;

use crate::error::ExperimentError;
use crate::runner::{Runner, Trained, Unit};

/// Figures by metric name (`pass@1`, ..., `reward`, `invalid_rate`).
pub type Figures = BTreeMap<String, Interval>;

/// Everything an experiment's tables and plots show (written as summary.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub name: String,
    pub description: String,
    /// Coverage and resamples of every interval.
    pub level: f64,
    pub resamples: usize,
    /// Metric names in display order.
    pub metrics: Vec<String>,
    pub runs: Vec<RunSummary>,
    pub comparisons: Vec<Comparison>,
    pub curves: Vec<CurveSet>,
    /// What could not be aggregated, in words.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub name: String,
    pub preset: String,
    pub method: String,
    pub env: String,
    pub seeds_planned: usize,
    /// Seeds whose trained evaluation is done (the intervals are over these).
    pub seeds_done: Vec<u64>,
    /// Training steps and scheduled episodes of a finished seed (the first).
    pub steps: Option<usize>,
    pub episodes: Option<usize>,
    pub eval_tasks: usize,
    pub samples_per_task: usize,
    pub num_attempts: usize,
    pub trained: Option<Figures>,
    pub untrained: Option<Figures>,
    /// Trained minus untrained on the same tasks and sampling streams (for a row evaluated as
    /// another run, that run's untrained evaluation).
    pub gain: Option<Figures>,
    /// For a run's `evaluate_as` row: the run whose evaluation its checkpoints got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluated_as: Option<String>,
    /// Per seed: summed training-step time, and the trained evaluation's time.
    pub train_seconds: Option<Interval>,
    pub eval_seconds: Option<Interval>,
}

/// `a - b` per metric, paired on tasks (and seeds when both have the same ones).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub seeds: usize,
    pub diff: Figures,
}

/// One learning-curve metric over training episodes, per run: the mean over seeds, and the
/// lowest and highest seed as the band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurveSet {
    pub metric: String,
    pub runs: Vec<RunCurve>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCurve {
    pub name: String,
    pub points: Vec<CurvePoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub episodes: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Seeds that reached this step.
    pub seeds: usize,
}

/// One finished evaluation: its tasks and its wall time.
#[derive(Debug, Clone)]
pub struct EvalFiles {
    pub tasks: Vec<TaskOutcome>,
    pub seconds: f64,
}

/// Reads an evaluation folder (eval.json and eval_tasks.jsonl).
pub fn read_eval(dir: &Path) -> Result<EvalFiles, ExperimentError> {
    let path = dir.join(EVAL_TASKS_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| ExperimentError::io(&path, e))?;
    let tasks = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str::<TaskOutcome>(l)
                .map_err(|e| ExperimentError::results(&path, format!("line {}: {e}", i + 1)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if tasks.is_empty() {
        return Err(ExperimentError::results(&path, "no tasks"));
    }
    let path = dir.join("eval.json");
    let text = std::fs::read_to_string(&path).map_err(|e| ExperimentError::io(&path, e))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| ExperimentError::results(&path, e.to_string()))?;
    let seconds = json.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
    Ok(EvalFiles { tasks, seconds })
}

/// The metric names of evaluations with `attempts` attempts.
pub fn metric_names(attempts: usize) -> Vec<String> {
    (1..=attempts)
        .map(|k| format!("pass@{k}"))
        .chain(["reward".to_string(), "invalid_rate".to_string()])
        .collect()
}

/// One task's value of `metric`; None for a metric the task does not have (pass@k beyond its
/// attempts).
pub fn task_value(task: &TaskOutcome, metric: &str) -> Option<f64> {
    let ratio = |a: f64, b: usize| if b == 0 { 0.0 } else { a / b as f64 };
    match metric {
        "reward" => Some(ratio(task.reward_sum, task.attempts)),
        "invalid_rate" => Some(ratio(task.invalid as f64, task.plays)),
        m => {
            let k: usize = m.strip_prefix("pass@")?.parse().ok()?;
            let solved = *task.solved_by.get(k.checked_sub(1)?)?;
            Some(ratio(solved as f64, task.trials))
        }
    }
}

/// The seeds x tasks table of `metric` over several evaluations of the same tasks.
fn table(evals: &[&EvalFiles], metric: &str) -> Option<Vec<Vec<f64>>> {
    evals
        .iter()
        .map(|e| e.tasks.iter().map(|t| task_value(t, metric)).collect())
        .collect()
}

fn task_seeds(e: &EvalFiles) -> Vec<u64> {
    e.tasks.iter().map(|t| t.task_seed).collect()
}

fn figures(
    evals: &[&EvalFiles],
    metrics: &[String],
    cfg: &BootstrapConfig,
) -> Result<Figures, ExperimentError> {
    let mut out = Figures::new();
    for m in metrics {
        if let Some(t) = table(evals, m) {
            let i = mean_ci(&t, cfg).map_err(|source| ExperimentError::Stats {
                what: m.clone(),
                source,
            })?;
            out.insert(m.clone(), i);
        }
    }
    Ok(out)
}

fn diffs(
    a: &[&EvalFiles],
    b: &[&EvalFiles],
    metrics: &[String],
    cfg: &BootstrapConfig,
) -> Result<Figures, ExperimentError> {
    let mut out = Figures::new();
    for m in metrics {
        if let (Some(ta), Some(tb)) = (table(a, m), table(b, m)) {
            let i = paired_diff_ci(&ta, &tb, cfg).map_err(|source| ExperimentError::Stats {
                what: m.clone(),
                source,
            })?;
            out.insert(m.clone(), i);
        }
    }
    Ok(out)
}

/// Checks that evaluations cover the same tasks in the same order.
fn same_tasks(evals: &[&EvalFiles]) -> bool {
    evals
        .windows(2)
        .all(|w| task_seeds(w[0]) == task_seeds(w[1]))
}

/// A seeds x 1 table's interval (per-seed figures such as wall time).
fn over_seeds(values: &[f64], cfg: &BootstrapConfig) -> Option<Interval> {
    let t: Vec<Vec<f64>> = values.iter().map(|&v| vec![v]).collect();
    mean_ci(&t, cfg).ok()
}

/// Aggregates whatever units of the experiment have finished.
pub fn aggregate(runner: &Runner) -> Result<Summary, ExperimentError> {
    runner.check_unchanged()?;
    let plan = runner.plan();
    let cfg = BootstrapConfig {
        resamples: plan.bootstrap.resamples,
        level: plan.bootstrap.level,
        seed: plan.bootstrap.seed,
    };
    let mut notes = Vec::new();
    let mut metrics: Vec<String> = Vec::new();
    let mut runs = Vec::new();
    // Per row (a run, or a run evaluated as another): the trained evaluations by seed.
    let mut trained_evals: Vec<Vec<(u64, EvalFiles)>> = Vec::new();
    let rows = (0..plan.runs.len()).map(|index| (index, None)).chain(
        plan.evaluations_as()
            .into_iter()
            .map(|(index, like)| (index, Some(like))),
    );
    for (index, like) in rows {
        let (row, evals) = summarize_row(runner, index, like, &cfg, &mut notes)?;
        for n in metric_names(row.num_attempts) {
            if !metrics.contains(&n) {
                metrics.push(n);
            }
        }
        runs.push(row);
        trained_evals.push(evals);
    }
    let row_index = |name: &str| runs.iter().position(|r| r.name == name);
    let mut comparisons = Vec::new();
    for [a, b] in &plan.compare {
        let (Some(ia), Some(ib)) = (row_index(a), row_index(b)) else {
            continue;
        };
        // Pair on the seeds both have finished.
        let common: Vec<u64> = trained_evals[ia]
            .iter()
            .map(|(s, _)| *s)
            .filter(|s| trained_evals[ib].iter().any(|(t, _)| t == s))
            .collect();
        if common.is_empty() {
            continue;
        }
        let pick = |i: usize| -> Vec<&EvalFiles> {
            common
                .iter()
                .filter_map(|s| {
                    trained_evals[i]
                        .iter()
                        .find(|(t, _)| t == s)
                        .map(|(_, e)| e)
                })
                .collect()
        };
        let (ea, eb) = (pick(ia), pick(ib));
        if !same_tasks(&[ea[0], eb[0]]) {
            notes.push(format!(
                "compare [{a}, {b}]: the runs were evaluated on different tasks; not compared"
            ));
            continue;
        }
        let shared: Vec<String> = metrics
            .iter()
            .filter(|m| task_value(&ea[0].tasks[0], m).is_some())
            .filter(|m| task_value(&eb[0].tasks[0], m).is_some())
            .cloned()
            .collect();
        comparisons.push(Comparison {
            a: a.clone(),
            b: b.clone(),
            seeds: common.len(),
            diff: diffs(&ea, &eb, &shared, &cfg)?,
        });
    }
    let curves = plan
        .curves
        .iter()
        .map(|metric| curve_set(runner, metric))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Summary {
        name: plan.name.clone(),
        description: plan.description.clone(),
        level: cfg.level,
        resamples: cfg.resamples,
        metrics,
        runs,
        comparisons,
        curves,
        notes,
    })
}

/// One row of the summary: run `index` evaluated as itself, or (with `like`) its checkpoints
/// evaluated as run `like` is, whose untrained evaluation is then the row's baseline. Returns
/// the row and its trained evaluations by seed.
fn summarize_row(
    runner: &Runner,
    index: usize,
    like: Option<usize>,
    cfg: &BootstrapConfig,
    notes: &mut Vec<String>,
) -> Result<(RunSummary, Vec<(u64, EvalFiles)>), ExperimentError> {
    let plan = runner.plan();
    let run = &plan.runs[index];
    let (name, evaluated_as) = match like {
        Some(l) => (
            crate::plan::evaluated_as_name(&run.name, &plan.runs[l].name),
            Some(plan.runs[l].name.clone()),
        ),
        None => (run.name.clone(), None),
    };
    let eval_run = like.unwrap_or(index);
    let cfg0 = plan.config(index, plan.seeds[0])?;
    let eval_cfg = plan.config(eval_run, plan.seeds[0])?.eval;
    let names = metric_names(eval_cfg.num_attempts);
    let untrained_unit = Unit::Untrained { run: eval_run };
    let untrained = if runner.is_done(&untrained_unit) {
        Some(read_eval(&runner.eval_dir(&untrained_unit))?)
    } else {
        None
    };
    let mut evals = Vec::new();
    let mut markers: Vec<Trained> = Vec::new();
    for &seed in &plan.seeds {
        let unit = match like {
            Some(like) => Unit::EvalAs {
                run: index,
                seed,
                like,
            },
            None => Unit::Eval { run: index, seed },
        };
        if !runner.is_done(&unit) {
            continue;
        }
        evals.push((seed, read_eval(&runner.eval_dir(&unit))?));
        let marker = runner.seed_dir(index, seed).join("trained.json");
        let text = std::fs::read_to_string(&marker).map_err(|e| ExperimentError::io(&marker, e))?;
        markers.push(
            serde_json::from_str(&text)
                .map_err(|e| ExperimentError::results(&marker, e.to_string()))?,
        );
    }
    let refs: Vec<&EvalFiles> = evals.iter().map(|(_, e)| e).collect();
    if !same_tasks(&refs) {
        return Err(ExperimentError::results(
            runner.dir(),
            format!("row `{name}`: its seeds were evaluated on different tasks"),
        ));
    }
    let trained = if refs.is_empty() {
        None
    } else {
        Some(figures(&refs, &names, cfg)?)
    };
    let gain = match (&untrained, refs.is_empty()) {
        (Some(u), false) if same_tasks(&[refs[0], u]) => Some(diffs(&refs, &[u], &names, cfg)?),
        (Some(_), false) => {
            notes.push(format!(
                "row `{name}`: the untrained policy was evaluated on other tasks; no gain"
            ));
            None
        }
        _ => None,
    };
    // A row evaluated as another run shows no untrained figures of its own: they are the
    // other run's untrained row.
    let untrained_figs = match like {
        Some(_) => None,
        None => untrained
            .as_ref()
            .map(|u| figures(&[u], &names, cfg))
            .transpose()?,
    };
    let train_secs: Vec<f64> = markers.iter().map(|m| m.train_seconds).collect();
    let eval_secs: Vec<f64> = evals.iter().map(|(_, e)| e.seconds).collect();
    let row = RunSummary {
        name,
        preset: plan.presets[index].display().to_string(),
        method: cfg0.algorithm.method.clone(),
        env: cfg0.env.name.clone(),
        seeds_planned: plan.seeds.len(),
        seeds_done: evals.iter().map(|(s, _)| *s).collect(),
        steps: markers.first().map(|m| m.steps),
        episodes: markers.first().map(|m| m.steps * m.episodes_per_step),
        eval_tasks: eval_cfg.tasks,
        samples_per_task: eval_cfg.samples_per_task.max(1),
        num_attempts: eval_cfg.num_attempts,
        trained,
        untrained: untrained_figs,
        gain,
        evaluated_as,
        train_seconds: over_seeds(&train_secs, cfg),
        eval_seconds: over_seeds(&eval_secs, cfg),
    };
    Ok((row, evals))
}

/// The learning curve of `metric` per run from the training runs' metrics (finished or not).
fn curve_set(runner: &Runner, metric: &str) -> Result<CurveSet, ExperimentError> {
    let plan = runner.plan();
    let mut runs = Vec::new();
    for (index, run) in plan.runs.iter().enumerate() {
        let per_step = crate::plan::episodes_per_step(&plan.config(index, plan.seeds[0])?);
        // step -> values over seeds
        let mut by_step: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for &seed in &plan.seeds {
            let dir = RunDir::new(&runner.seed_dir(index, seed).join("train"));
            if !dir.metrics_jsonl().is_file() {
                continue;
            }
            let rows = dir
                .read_metrics()
                .map_err(|e| ExperimentError::results(&dir.metrics_jsonl(), e.to_string()))?;
            for r in rows {
                if r.get("kind").and_then(Value::as_str) == Some("eval") {
                    continue;
                }
                let (Some(step), Some(v)) = (
                    r.get("step").and_then(Value::as_u64),
                    r.get(metric).and_then(Value::as_f64),
                ) else {
                    continue;
                };
                if v.is_finite() {
                    by_step.entry(step).or_default().push(v);
                }
            }
        }
        let points = by_step
            .into_iter()
            .map(|(step, vs)| CurvePoint {
                episodes: (step as usize * per_step) as f64,
                mean: vs.iter().sum::<f64>() / vs.len() as f64,
                min: vs.iter().copied().fold(f64::INFINITY, f64::min),
                max: vs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                seeds: vs.len(),
            })
            .collect();
        runs.push(RunCurve {
            name: run.name.clone(),
            points,
        });
    }
    Ok(CurveSet {
        metric: metric.to_string(),
        runs,
    })
}
