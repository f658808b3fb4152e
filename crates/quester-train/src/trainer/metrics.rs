//! Metrics rows and trajectory rows.

use serde_json::{json, Map, Value};

use super::EvalResult;
use crate::policy::UpdateStats;
use crate::sample::{Sample, SampleKind, SampleRole, Trial};

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// The metrics of one training step (timings are added by the caller).
pub(crate) fn train_row(
    step: usize,
    trials: &[Trial],
    samples: &[Sample],
    advantages: Option<&[f64]>,
    stats: &[UpdateStats],
    num_attempts: usize,
) -> Map<String, Value> {
    let mut row = Map::new();
    row.insert("step".into(), json!(step + 1));
    row.insert("kind".into(), json!("train"));
    row.insert(
        "reward_mean".into(),
        json!(mean(
            trials
                .iter()
                .flat_map(|t| t.attempts.iter().map(|a| a.reward_sum))
        )),
    );
    for k in 1..=num_attempts {
        let p = mean(trials.iter().map(|t| f64::from(u8::from(t.won_within(k)))));
        row.insert(format!("train_pass@{k}"), json!(p));
    }
    let plays = samples.iter().filter(|s| s.kind == SampleKind::Play);
    row.insert(
        "invalid_rate".into(),
        json!(mean(plays.map(|s| f64::from(u8::from(!s.valid))))),
    );
    let refl: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.kind == SampleKind::Reflect)
        .collect();
    if !refl.is_empty() {
        row.insert(
            "reflect_invalid_rate".into(),
            json!(mean(refl.iter().map(|s| f64::from(u8::from(!s.valid))))),
        );
    }
    row.insert(
        "prompt_len".into(),
        json!(mean(samples.iter().map(|s| s.prompt_ids.len() as f64))),
    );
    row.insert(
        "response_len".into(),
        json!(mean(samples.iter().map(|s| s.response_ids.len() as f64))),
    );
    row.insert("samples".into(), json!(samples.len()));
    if let Some(a) = advantages {
        row.insert(
            "adv_abs_mean".into(),
            json!(mean(a.iter().map(|x| x.abs()))),
        );
    }
    let ok: Vec<&UpdateStats> = stats.iter().filter(|s| !s.skipped_nonfinite).collect();
    row.insert("updates".into(), json!(ok.len()));
    if !ok.is_empty() {
        row.insert("loss".into(), json!(mean(ok.iter().map(|s| s.loss))));
        row.insert(
            "grad_norm".into(),
            json!(mean(ok.iter().map(|s| s.grad_norm))),
        );
        row.insert("entropy".into(), json!(mean(ok.iter().map(|s| s.entropy))));
    }
    row
}

/// Per opponent (when trials have one): the mean reward of the first and of the final attempt
/// played, and the number of trials.
pub(crate) fn add_per_opponent(row: &mut Map<String, Value>, trials: &[Trial]) {
    let mut names: Vec<&str> = trials
        .iter()
        .map(|t| t.opponent.as_str())
        .filter(|o| !o.is_empty())
        .collect();
    names.sort_unstable();
    names.dedup();
    for o in names {
        let mine: Vec<&Trial> = trials.iter().filter(|t| t.opponent == o).collect();
        let first = mean(
            mine.iter()
                .map(|t| t.attempts.first().map_or(0.0, |a| a.reward_sum)),
        );
        let last = mean(
            mine.iter()
                .map(|t| t.attempts.last().map_or(0.0, |a| a.reward_sum)),
        );
        row.insert(format!("reward_first/{o}"), json!(first));
        row.insert(format!("reward_final/{o}"), json!(last));
        row.insert(format!("trials/{o}"), json!(mine.len()));
    }
}

/// Adds evaluation results to a row.
pub(crate) fn add_eval(row: &mut Map<String, Value>, ev: &EvalResult) {
    for (k, p) in ev.pass_at.iter().enumerate() {
        row.insert(format!("eval_pass@{}", k + 1), json!(p));
    }
    row.insert("eval_reward_mean".into(), json!(ev.reward_mean));
    for (k, ((r, w), (d, l))) in ev
        .reward_at
        .iter()
        .zip(&ev.win_at)
        .zip(ev.draw_at.iter().zip(&ev.loss_at))
        .enumerate()
    {
        row.insert(format!("eval_reward@{}", k + 1), json!(r));
        row.insert(format!("eval_win@{}", k + 1), json!(w));
        row.insert(format!("eval_draw@{}", k + 1), json!(d));
        row.insert(format!("eval_loss@{}", k + 1), json!(l));
    }
    row.insert("eval_invalid_rate".into(), json!(ev.invalid_rate));
    row.insert(SAMPLES_PER_TASK_KEY.into(), json!(ev.samples_per_task));
    for (k, p) in &ev.pass_k {
        row.insert(pass_k_key(*k), json!(p));
    }
}

/// The prefix of the pass@k-curve keys of an evaluation row (`eval_pass_k@4`: the unbiased
/// pass@4 over `eval_samples_per_task` samples per task; `eval_pass@4` is pass@4 over
/// attempts).
pub const PASS_K_PREFIX: &str = "eval_pass_k@";

/// The key of the curve's n (trials per task) in an evaluation row.
pub const SAMPLES_PER_TASK_KEY: &str = "eval_samples_per_task";

/// The metrics key of the curve's value at `k`.
pub(crate) fn pass_k_key(k: usize) -> String {
    format!("{PASS_K_PREFIX}{k}")
}

/// The samples of a trial that enter the update.
pub(crate) fn trained_samples(trial: &Trial) -> usize {
    trial.samples.iter().filter(|s| s.role.is_trained()).count()
}

/// One trial as a trajectories.jsonl row: attempts, and every response with its reward and
/// (in training) advantage.
pub(crate) fn trajectory_row(
    step: usize,
    phase: &str,
    trial: &Trial,
    advantages: Option<&[f64]>,
) -> Value {
    // Advantages exist for trained samples only, in trial order.
    let mut trained = 0usize;
    let samples: Vec<Value> = trial
        .samples
        .iter()
        .map(|s| {
            let advantage = if s.role.is_trained() {
                trained += 1;
                advantages.and_then(|a| a.get(trained - 1)).copied()
            } else {
                None
            };
            let mut v = json!({
                "attempt": s.attempt,
                "turn": s.turn,
                "kind": s.kind,
                "prompt": s.prompt,
                "response": s.response,
                "reward": s.reward,
                "valid": s.valid,
                "won": s.won,
                "advantage": advantage,
            });
            if s.role != SampleRole::Policy {
                v["role"] = json!(s.role);
            }
            if s.score_adjustment != 0.0 {
                v["score_adjustment"] = json!(s.score_adjustment);
            }
            v
        })
        .collect();
    json!({
        "step": step + 1,
        "phase": phase,
        "task_id": trial.task_id,
        "task_seed": trial.task_seed,
        "trial": trial.trial,
        "opponent": trial.opponent,
        "attempts": trial.attempts,
        "samples": samples,
    })
}
