//! Grouping metric keys into families, one plot per family.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Keys that hold the x axis rather than a metric, in order of preference.
pub const X_KEYS: [&str; 3] = ["step", "iteration", "iter"];

/// Keys never plotted (bookkeeping, not metrics).
const SKIP_KEYS: [&str; 5] = ["timestamp", "time_unix", "wall_clock", "epoch_time", "seed"];

/// A set of metrics drawn in one plot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// File-safe id, used for the PNG name.
    pub id: String,
    /// Plot title.
    pub title: String,
    /// The metric keys, sorted.
    pub keys: Vec<String>,
}

/// Phase prefixes that do not change what a metric measures (`eval_pass@1` is a pass@1).
const PHASES: [&str; 4] = ["train_", "eval_", "val_", "test_"];

/// The family (id, title) of a metric key, from its last path segment without a phase prefix
/// (`eval/pass@2`, `eval_pass@2` -> `pass@2`). Rates of winning share one plot, as do train and
/// eval values of one metric; everything unknown gets a plot of its own.
pub fn family_of(key: &str) -> (String, String) {
    let last = key.rsplit('/').next().unwrap_or(key).to_ascii_lowercase();
    let leaf = PHASES
        .iter()
        .find_map(|p| last.strip_prefix(p))
        .unwrap_or(&last)
        .to_string();
    let is = |prefixes: &[&str]| prefixes.iter().any(|p| leaf.starts_with(p));
    let known = if is(&["distinct_outcomes"]) {
        Some(("distinct_outcomes", "Distinct outcomes explored"))
    } else if is(&["pass@", "success", "won", "win_rate", "solved"]) {
        Some(("success", "Success and pass@k"))
    } else if is(&["reward", "return", "score"]) {
        Some(("reward", "Reward"))
    } else if is(&["entropy"]) {
        Some(("entropy", "Entropy"))
    } else if is(&["kl"]) {
        Some(("kl", "KL divergence"))
    } else if is(&["response_len", "resp_len", "length", "num_tokens", "tokens"]) {
        Some(("length", "Response length (tokens)"))
    } else if leaf.contains("invalid") {
        Some(("invalid", "Invalid action rate"))
    } else if leaf.contains("loss") {
        Some(("loss", "Loss"))
    } else if is(&["time", "secs", "seconds"]) || leaf.ends_with("_s") || leaf.ends_with("_secs") {
        Some(("time", "Time (s)"))
    } else if is(&["lr", "learning_rate"]) {
        Some(("lr", "Learning rate"))
    } else if is(&["grad_norm", "clip", "ratio", "adv"]) {
        Some(("optim", "Optimisation"))
    } else if leaf.ends_with("updates") {
        Some(("updates", "Updates"))
    } else {
        None
    };
    match known {
        Some((id, title)) => (id.to_string(), title.to_string()),
        None => (file_safe(key), key.to_string()),
    }
}

/// `key` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn file_safe(key: &str) -> String {
    let s: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("metric_{s}")
}

/// The x value of a row: its step-like key, else its position.
pub fn x_of(row: &Map<String, Value>, index: usize) -> f64 {
    X_KEYS
        .iter()
        .find_map(|k| row.get(*k).and_then(Value::as_f64))
        .unwrap_or(index as f64)
}

/// The name of the x axis used by `rows`.
pub fn x_label(rows: &[Map<String, Value>]) -> &'static str {
    X_KEYS
        .iter()
        .find(|k| {
            rows.iter()
                .any(|r| r.get(**k).is_some_and(Value::is_number))
        })
        .copied()
        .unwrap_or("row")
}

/// Every key with at least one finite number, grouped into families (sorted by id). The pass@k
/// curve's keys are left out: they are drawn against k, not over steps (`super::passk`).
pub fn families(rows: &[Map<String, Value>]) -> Vec<Family> {
    let mut groups: BTreeMap<String, Family> = BTreeMap::new();
    for row in rows {
        for (key, value) in row {
            if X_KEYS.contains(&key.as_str())
                || SKIP_KEYS.contains(&key.as_str())
                || super::passk::is_curve_key(key)
            {
                continue;
            }
            if !value.as_f64().is_some_and(f64::is_finite) {
                continue;
            }
            let (id, title) = family_of(key);
            let family = groups.entry(id.clone()).or_insert_with(|| Family {
                id,
                title,
                keys: Vec::new(),
            });
            if !family.keys.contains(key) {
                family.keys.push(key.clone());
            }
        }
    }
    let mut out: Vec<Family> = groups.into_values().collect();
    for f in &mut out {
        f.keys.sort_by_key(|k| natural_key(k));
    }
    out
}

/// Sort key that puts `pass@2` before `pass@10`.
fn natural_key(s: &str) -> (String, u64) {
    let digits_at = s
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()
        .map(|(i, _)| i);
    match digits_at {
        Some(i) => (s[..i].to_string(), s[i..].parse().unwrap_or(u64::MAX)),
        None => (s.to_string(), 0),
    }
}

/// The finite (x, y) points of `key` over `rows`.
pub fn series(rows: &[Map<String, Value>], key: &str) -> Vec<(f64, f64)> {
    rows.iter()
        .enumerate()
        .filter_map(|(i, row)| {
            let y = row.get(key)?.as_f64().filter(|y| y.is_finite())?;
            Some((x_of(row, i), y))
        })
        .collect()
}
