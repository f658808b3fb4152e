//! The summary cards at the top of the report.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::families::{families, series};
use super::trajectories::TrialView;
use crate::render::escape;

/// Most metric cards shown.
const MAX_METRIC_CARDS: usize = 10;

fn card(label: &str, value: &str, note: &str) -> String {
    format!(
        "<div class=\"card\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div class=\"note\">{}</div></div>",
        escape(label),
        escape(value),
        escape(note)
    )
}

fn fmt(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// Cards: rows logged, final and best value of each success / reward metric, the pass@k curves
/// (first and last evaluation), trajectory outcomes.
pub fn cards(rows: &[Map<String, Value>], trials: &[TrialView]) -> String {
    let mut out = String::new();
    let last_x = rows
        .last()
        .map(|r| super::families::x_of(r, rows.len() - 1));
    out.push_str(&card(
        "metric rows",
        &rows.len().to_string(),
        &last_x.map_or(String::new(), |x| format!("last step {}", fmt(x))),
    ));
    let headline: Vec<String> = families(rows)
        .into_iter()
        .filter(|f| f.id == "success" || f.id == "reward")
        .flat_map(|f| f.keys)
        .take(MAX_METRIC_CARDS)
        .collect();
    for key in headline {
        let points = series(rows, &key);
        let (Some(last), Some(best)) = (
            points.last(),
            points
                .iter()
                .copied()
                .reduce(|a, b| if b.1 > a.1 { b } else { a }),
        ) else {
            continue;
        };
        // The first point too, so a run evaluated before training reads as before -> after.
        let first = points
            .first()
            .filter(|f| f.0 != last.0)
            .map_or(String::new(), |f| {
                format!("; first {} at step {}", fmt(f.1), fmt(f.0))
            });
        out.push_str(&card(
            &key,
            &fmt(last.1),
            &format!("final; best {} at step {}{first}", fmt(best.1), fmt(best.0)),
        ));
    }
    // The pass@k curves (base and trained): the largest k's value, the whole curve as a note.
    for c in super::passk::base_and_trained(rows) {
        let Some(&(k_max, top)) = c.points.last() else {
            continue;
        };
        let note: Vec<String> = c
            .points
            .iter()
            .map(|&(k, y)| format!("k={k} {y:.3}"))
            .collect();
        out.push_str(&card(
            &format!(
                "{}{k_max} \u{2014} {}",
                super::passk::PASS_K_PREFIX,
                c.label()
            ),
            &format!("{top:.3}"),
            &format!("pass@k: {}", note.join(" \u{b7} ")),
        ));
    }
    if !trials.is_empty() {
        let won = trials.iter().filter(|t| t.won).count();
        out.push_str(&card(
            "trials in trajectories.jsonl",
            &trials.len().to_string(),
            &format!(
                "{won} won ({:.1}%)",
                100.0 * won as f64 / trials.len() as f64
            ),
        ));
        let mut by_attempt: BTreeMap<i64, usize> = BTreeMap::new();
        for t in trials.iter().filter_map(|t| t.won_at) {
            *by_attempt.entry(t).or_default() += 1;
        }
        for (attempt, n) in by_attempt {
            out.push_str(&card(
                &format!("first won in attempt {attempt}"),
                &n.to_string(),
                &format!("of {} trials", trials.len()),
            ));
        }
    }
    out
}
