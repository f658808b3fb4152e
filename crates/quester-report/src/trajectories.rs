//! Turning trajectories.jsonl rows into trials -> attempts -> turns for the browser.
//!
//! Rows may be flat (one row per generated sample: play turn or reflection), one row per trial
//! with its `samples` (the trainer's format), or nested (`attempts: [{turns: [...],
//! reflection}]`); see docs/report.md for the accepted keys. A reflection belongs to the attempt
//! it prepares (it is generated between attempt a and a+1 and carries attempt a+1), so it is
//! shown first in that attempt.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

/// Longest text kept per field (the rest is cut, with a note).
const MAX_TEXT: usize = 20_000;

/// One turn (a play step or a reflection).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnView {
    /// Turn number within the attempt.
    pub turn: i64,
    /// `play` or `reflect`.
    pub kind: String,
    /// Observation shown to the agent (or the prompt).
    pub observation: Option<String>,
    /// The model's response.
    pub response: Option<String>,
    /// The parsed action.
    pub action: Option<String>,
    /// Reward of this turn.
    pub reward: Option<f64>,
    /// Whether the action was invalid.
    pub invalid: Option<bool>,
    /// Other scalar fields of the row (advantage, anchor, ...), shown as a small table.
    pub extra: BTreeMap<String, Value>,
}

/// One attempt of a trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptView {
    /// Attempt number, counted from 1 (rows counting from 0 are shifted).
    pub attempt: i64,
    /// Whether the attempt was won (any turn marked won).
    pub won: bool,
    /// Sum of turn rewards.
    pub reward: f64,
    /// Turns in order; the reflection that prepared this attempt (if any) comes first.
    pub turns: Vec<TurnView>,
}

/// One trial (a task played for up to num_attempts attempts).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialView {
    /// Training step or iteration the trial was sampled at.
    pub step: Option<i64>,
    /// Environment name if given.
    pub env: Option<String>,
    /// Task id.
    pub task: String,
    /// Trial id.
    pub trial: String,
    /// `train` or `eval` when the writer says so.
    pub phase: Option<String>,
    /// Won in any attempt.
    pub won: bool,
    /// First attempt that was won (counted from 1).
    pub won_at: Option<i64>,
    /// Attempts in order.
    pub attempts: Vec<AttemptView>,
}

fn text_of(row: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match row.get(*k)? {
        Value::String(s) => Some(cut(s)),
        Value::Null => None,
        other => Some(cut(&other.to_string())),
    })
}

fn cut(s: &str) -> String {
    if s.len() <= MAX_TEXT {
        return s.to_string();
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes cut]", &s[..end], s.len() - end)
}

fn int_of(row: &Map<String, Value>, keys: &[&str]) -> Option<i64> {
    keys.iter().find_map(|k| {
        let v = row.get(*k)?;
        v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
    })
}

fn id_of(row: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match row.get(*k)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    })
}

fn bool_of(row: &Map<String, Value>, keys: &[&str]) -> Option<bool> {
    keys.iter().find_map(|k| match row.get(*k)? {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_f64().map(|x| x != 0.0),
        _ => None,
    })
}

const STEP: &[&str] = &["step", "iteration", "iter"];
const TASK: &[&str] = &["task_id", "task", "env_id"];
const TRIAL: &[&str] = &["trial_id", "trial", "traj_id"];
const ATTEMPT: &[&str] = &["attempt", "attempt_id"];
const TURN: &[&str] = &["turn", "turn_id", "t"];
const OBS: &[&str] = &["observation", "obs", "prompt"];
const RESPONSE: &[&str] = &["response", "completion", "text", "output", "reflection"];
const KNOWN: &[&str] = &[
    "step",
    "iteration",
    "iter",
    "task_id",
    "task",
    "env_id",
    "trial_id",
    "trial",
    "traj_id",
    "attempt",
    "attempt_id",
    "turn",
    "turn_id",
    "t",
    "observation",
    "obs",
    "prompt",
    "response",
    "completion",
    "text",
    "output",
    "reflection",
    "action",
    "reward",
    "won",
    "success",
    "invalid",
    "kind",
    "env",
    "attempts",
    "turns",
    "samples",
    "valid",
    "phase",
    "task_seed",
    "attempt_won",
    "anchor",
];

/// A flat record: one turn with the ids of where it belongs.
struct Flat {
    step: Option<i64>,
    phase: Option<String>,
    env: Option<String>,
    task: String,
    trial: String,
    attempt: i64,
    won: bool,
    order: usize,
    turn: TurnView,
}

fn flat_turn(row: &Map<String, Value>, order: usize) -> TurnView {
    let kind = id_of(row, &["kind"]).unwrap_or_else(|| {
        if row.contains_key("reflection") && !row.contains_key("response") {
            "reflect".into()
        } else {
            "play".into()
        }
    });
    let kind = if kind.starts_with("reflect") {
        "reflect".to_string()
    } else {
        kind
    };
    let extra = row
        .iter()
        .filter(|(k, v)| {
            !KNOWN.contains(&k.as_str())
                && (v.is_number() || v.is_boolean() || v.as_str().is_some_and(|s| s.len() <= 80))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    TurnView {
        turn: int_of(row, TURN).unwrap_or(order as i64),
        kind,
        observation: text_of(row, OBS),
        response: text_of(row, RESPONSE),
        action: text_of(row, &["action"]),
        reward: row.get("reward").and_then(Value::as_f64),
        invalid: bool_of(row, &["invalid"]).or_else(|| bool_of(row, &["valid"]).map(|v| !v)),
        extra,
    }
}

/// Spreads nested rows into flat ones, children inheriting their parents' ids.
fn flatten(row: &Map<String, Value>, out: &mut Vec<Map<String, Value>>) {
    let inherit =
        |child: &Value, parent: &Map<String, Value>, drop: &str| -> Option<Map<String, Value>> {
            let mut m = child.as_object()?.clone();
            for (k, v) in parent {
                if k != drop
                    && !m.contains_key(k)
                    && !matches!(
                        k.as_str(),
                        "attempts" | "turns" | "samples" | "reflection" | "won" | "reward"
                    )
                {
                    m.insert(k.clone(), v.clone());
                }
            }
            Some(m)
        };
    if let Some(samples) = row.get("samples").and_then(Value::as_array) {
        for s in samples {
            if let Some(m) = inherit(s, row, "samples") {
                out.push(m);
            }
        }
        return;
    }
    let nested = row
        .get("attempts")
        .and_then(Value::as_array)
        .filter(|a| a.iter().any(|x| x.get("turns").is_some()));
    if let Some(attempts) = nested {
        for (i, a) in attempts.iter().enumerate() {
            if let Some(mut m) = inherit(a, row, "attempts") {
                m.entry("attempt").or_insert(Value::from(i as i64));
                flatten(&m, out);
            }
        }
        return;
    }
    if let Some(turns) = row.get("turns").and_then(Value::as_array) {
        for (i, t) in turns.iter().enumerate() {
            if let Some(mut m) = inherit(t, row, "turns") {
                m.entry("turn").or_insert(Value::from(i as i64));
                m.remove("reflection");
                out.push(m);
            }
        }
        // An attempt's reflection on itself prepares the next attempt.
        if let Some(r) = row.get("reflection").filter(|r| !r.is_null()) {
            let mut m = row.clone();
            m.remove("turns");
            m.insert("kind".into(), Value::from("reflect"));
            m.insert("response".into(), r.clone());
            m.insert("turn".into(), Value::from(0));
            let next = int_of(row, ATTEMPT).unwrap_or(0) + 1;
            m.insert("attempt".into(), Value::from(next));
            out.push(m);
        }
        return;
    }
    out.push(row.clone());
}

/// Groups rows into trials, sorted by step, task, trial; attempts and turns in order.
pub fn build_trials(rows: &[Map<String, Value>]) -> Vec<TrialView> {
    let mut flat_rows = Vec::new();
    for row in rows {
        flatten(row, &mut flat_rows);
    }
    let flats: Vec<Flat> = flat_rows
        .iter()
        .enumerate()
        .map(|(order, row)| Flat {
            step: int_of(row, STEP),
            phase: id_of(row, &["phase"]),
            env: id_of(row, &["env"]),
            task: id_of(row, TASK).unwrap_or_else(|| "?".into()),
            trial: id_of(row, TRIAL).unwrap_or_else(|| "0".into()),
            attempt: int_of(row, ATTEMPT).unwrap_or(0),
            won: bool_of(row, &["won", "success"]).unwrap_or(false),
            order,
            turn: flat_turn(row, order),
        })
        .collect();
    // Display attempts from 1 whatever base the writer used.
    let offset = i64::from(flats.iter().map(|f| f.attempt).min() == Some(0));
    type Key = (Option<i64>, Option<String>, String, String);
    let mut trials: BTreeMap<Key, Vec<Flat>> = BTreeMap::new();
    for f in flats {
        trials
            .entry((f.step, f.phase.clone(), f.task.clone(), f.trial.clone()))
            .or_default()
            .push(f);
    }
    trials
        .into_iter()
        .map(|((step, phase, task, trial), mut turns)| {
            let env = turns.iter().find_map(|f| f.env.clone());
            // A reflection opens the attempt it prepares.
            turns.sort_by_key(|f| (f.attempt, f.turn.kind != "reflect", f.turn.turn, f.order));
            let mut attempts: Vec<AttemptView> = Vec::new();
            for f in turns {
                if attempts
                    .last()
                    .is_none_or(|a| a.attempt != f.attempt + offset)
                {
                    attempts.push(AttemptView {
                        attempt: f.attempt + offset,
                        won: false,
                        reward: 0.0,
                        turns: Vec::new(),
                    });
                }
                if let Some(a) = attempts.last_mut() {
                    a.won |= f.won && f.turn.kind != "reflect";
                    a.reward += f.turn.reward.unwrap_or(0.0);
                    a.turns.push(f.turn);
                }
            }
            let won_at = attempts.iter().find(|a| a.won).map(|a| a.attempt);
            TrialView {
                step,
                env,
                task,
                trial,
                phase,
                won: won_at.is_some(),
                won_at,
                attempts,
            }
        })
        .collect()
}
