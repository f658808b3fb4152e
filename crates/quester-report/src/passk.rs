//! The pass@k curve plot: the unbiased pass@k over samples per task (`eval_pass_k@K` keys of
//! evaluation rows) against log2 k, for the first evaluation row (the base model when the run
//! evaluated at start) and the last one (the trained model).

use serde_json::{Map, Value};

use super::families::x_of;

pub use quester_train::trainer::metrics::{PASS_K_PREFIX, SAMPLES_PER_TASK_KEY as SAMPLES_KEY};

/// Whether `key` is a point of the pass@k curve or its n: drawn in the curve plot, not over
/// steps.
pub fn is_curve_key(key: &str) -> bool {
    key.starts_with(PASS_K_PREFIX) || key == SAMPLES_KEY
}

/// The curve of a row: (k, value) sorted by k, finite values only (empty: not a curve row).
pub fn curve_of(row: &Map<String, Value>) -> Vec<(usize, f64)> {
    let mut points: Vec<(usize, f64)> = row
        .iter()
        .filter_map(|(key, v)| {
            let k = key.strip_prefix(PASS_K_PREFIX)?.parse::<usize>().ok()?;
            let y = v.as_f64().filter(|y| y.is_finite())?;
            Some((k, y))
        })
        .filter(|&(k, _)| k >= 1)
        .collect();
    points.sort_by_key(|p| p.0);
    points
}

/// A curve of the report: the row's step, its n, its points and what it shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub step: f64,
    pub samples_per_task: Option<u64>,
    pub points: Vec<(usize, f64)>,
    /// `base` (the first curve, at step 0: the untrained model), `trained` (the last of two) or
    /// empty.
    pub role: &'static str,
}

impl Curve {
    /// The legend label: `step 0 (base, n=8)`, `step 10 (trained, n=8)`.
    pub fn label(&self) -> String {
        let mut notes: Vec<String> = Vec::new();
        if !self.role.is_empty() {
            notes.push(self.role.to_string());
        }
        if let Some(n) = self.samples_per_task {
            notes.push(format!("n={n}"));
        }
        let step = if self.step.fract() == 0.0 {
            format!("{:.0}", self.step)
        } else {
            format!("{}", self.step)
        };
        if notes.is_empty() {
            format!("step {step}")
        } else {
            format!("step {step} ({})", notes.join(", "))
        }
    }

    /// The points as (log2 k, value).
    pub fn log2_points(&self) -> Vec<(f64, f64)> {
        self.points
            .iter()
            .map(|&(k, y)| ((k as f64).log2(), y))
            .collect()
    }
}

/// The first and the last row carrying a curve (one curve when only one row does, none when no
/// row does).
pub fn base_and_trained(rows: &[Map<String, Value>]) -> Vec<Curve> {
    let curves: Vec<(usize, Vec<(usize, f64)>)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (i, curve_of(r)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    let pick = match curves.as_slice() {
        [] => vec![],
        [only] => vec![only.clone()],
        [first, .., last] => vec![first.clone(), last.clone()],
    };
    let two = pick.len() == 2;
    pick.into_iter()
        .enumerate()
        .map(|(j, (i, points))| {
            let step = x_of(&rows[i], i);
            Curve {
                step,
                samples_per_task: rows[i].get(SAMPLES_KEY).and_then(Value::as_u64),
                points,
                role: match (j, two) {
                    (0, _) if step == 0.0 => "base",
                    (1, true) => "trained",
                    _ => "",
                },
            }
        })
        .collect()
}
