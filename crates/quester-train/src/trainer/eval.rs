//! Evaluation: `eval.samples_per_task` trials per held-out task, pass@1..k over attempts, and
//! per attempt the mean reward and the win / draw / loss rates (a frozen, won trial counts its
//! last played attempt), all averaged over trials; and the pass@k curve over each task's
//! samples (the unbiased estimator, a trial counting as correct when won in any attempt).

use std::collections::BTreeMap;

use crate::config::TrainConfig;
use crate::error::TrainError;
use crate::method::TrainingMethod;
use crate::policy::Policy;
use crate::prompts::PromptTemplates;
use crate::rollout::{run_trials, EnvFactory};
use crate::sample::{SampleKind, Trial};

/// The outcome of an evaluation.
#[derive(Debug, Clone)]
pub struct EvalResult {
    /// pass@k for k = 1..=eval.num_attempts (over attempts, the share of trials).
    pub pass_at: Vec<f64>,
    /// Trials per task (n of the curve; the most any task had).
    pub samples_per_task: usize,
    /// The pass@k curve over samples: (k, mean over tasks of the unbiased estimate from the
    /// task's n trials, c of them won in any attempt), for the ks of `eval.pass_ks()`.
    pub pass_k: Vec<(usize, f64)>,
    /// Mean reward sum of an attempt.
    pub reward_mean: f64,
    /// Per attempt k: the mean reward of the trials as they stand after attempt k.
    pub reward_at: Vec<f64>,
    /// Per attempt k: shares of trials won / drawn (reward 0, not won) / lost (reward < 0).
    pub win_at: Vec<f64>,
    pub draw_at: Vec<f64>,
    pub loss_at: Vec<f64>,
    /// Share of play responses that were invalid actions.
    pub invalid_rate: f64,
    pub trials: Vec<Trial>,
}

/// Plays the method's evaluation trials (held-out tasks, `eval.env_settings`), with the same
/// sampling streams at every call (results at different steps are comparable).
pub fn evaluate_with(
    policy: &mut dyn Policy,
    make_env: &EnvFactory<'_>,
    method: &dyn TrainingMethod,
    cfg: &TrainConfig,
) -> Result<EvalResult, TrainError> {
    evaluate_expert_with(policy, make_env, method, cfg, None)
}

/// [`evaluate_with`], with the env's expert answering the play turns when `expert` is given
/// (the expert's row beside a trained policy's; `policy` then answers nothing).
pub fn evaluate_expert_with(
    policy: &mut dyn Policy,
    make_env: &EnvFactory<'_>,
    method: &dyn TrainingMethod,
    cfg: &TrainConfig,
    expert: Option<crate::rollout::ExpertPlay>,
) -> Result<EvalResult, TrainError> {
    let mut spec = method.eval_spec();
    spec.expert = expert;
    let requests = method.eval_requests();
    let trials = run_trials(policy, make_env, &requests, &spec, None)?;
    Ok(summarize(
        trials,
        cfg.eval.num_attempts,
        &cfg.eval.pass_ks(),
    ))
}

/// [`evaluate_with`] the method of `cfg`.
pub fn evaluate_policy(
    policy: &mut dyn Policy,
    make_env: &EnvFactory<'_>,
    cfg: &TrainConfig,
    templates: &PromptTemplates,
) -> Result<EvalResult, TrainError> {
    let method = crate::method::build(cfg, templates)?;
    evaluate_with(policy, make_env, method.as_ref(), cfg)
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    s / n.max(1) as f64
}

/// Per task (trials grouped by `task_seed`, in seed order): (n trials, c of them won in any
/// attempt).
pub(crate) fn per_task_wins(trials: &[Trial]) -> Vec<(usize, usize)> {
    let mut by_task: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    for t in trials {
        let e = by_task.entry(t.task_seed).or_default();
        e.0 += 1;
        e.1 += usize::from(t.attempts.iter().any(|a| a.won));
    }
    by_task.into_values().collect()
}

/// One evaluation task's trials, the unit an experiment's confidence intervals resample
/// (written as `eval_tasks.jsonl` beside `eval.json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskOutcome {
    pub task_seed: u64,
    /// Trials of the task.
    pub trials: usize,
    /// `solved_by[k-1]`: trials won in one of their first k attempts, k = 1..=num_attempts.
    pub solved_by: Vec<usize>,
    /// Reward summed over every played attempt, and the number of played attempts.
    pub reward_sum: f64,
    pub attempts: usize,
    /// Play responses, and how many of them were invalid actions.
    pub plays: usize,
    pub invalid: usize,
}

/// The trials grouped per task (in task-seed order).
pub fn per_task_outcomes(trials: &[Trial], num_attempts: usize) -> Vec<TaskOutcome> {
    let mut by_task: BTreeMap<u64, TaskOutcome> = BTreeMap::new();
    for t in trials {
        let e = by_task.entry(t.task_seed).or_insert_with(|| TaskOutcome {
            task_seed: t.task_seed,
            trials: 0,
            solved_by: vec![0; num_attempts],
            reward_sum: 0.0,
            attempts: 0,
            plays: 0,
            invalid: 0,
        });
        e.trials += 1;
        let first_win = t.attempts.iter().position(|a| a.won);
        for (k, solved) in e.solved_by.iter_mut().enumerate() {
            *solved += usize::from(first_win.is_some_and(|w| w <= k));
        }
        e.reward_sum += t.attempts.iter().map(|a| a.reward_sum).sum::<f64>();
        e.attempts += t.attempts.len();
        for s in t.samples.iter().filter(|s| s.kind == SampleKind::Play) {
            e.plays += 1;
            e.invalid += usize::from(!s.valid);
        }
    }
    by_task.into_values().collect()
}

/// The figures of a set of evaluation trials; `pass_ks` are the ks of the pass@k curve.
pub(crate) fn summarize(trials: Vec<Trial>, num_attempts: usize, pass_ks: &[usize]) -> EvalResult {
    let per_task = per_task_wins(&trials);
    let samples_per_task = per_task.iter().map(|&(n, _)| n).max().unwrap_or(0);
    let pass_k = pass_ks
        .iter()
        .copied()
        .zip(quester_algos::pass_at_k_curve(&per_task, pass_ks))
        .collect();
    let wins: Vec<Vec<bool>> = trials
        .iter()
        .map(|t| t.attempts.iter().map(|a| a.won).collect())
        .collect();
    let pass_at = quester_algos::pass_at_k(&wins, num_attempts);
    let reward_mean = mean(
        trials
            .iter()
            .flat_map(|t| t.attempts.iter().map(|a| a.reward_sum)),
    );
    let per_attempt = |f: &dyn Fn(&crate::sample::AttemptOutcome) -> f64| -> Vec<f64> {
        (0..num_attempts)
            .map(|k| mean(trials.iter().filter_map(|t| t.attempt_or_last(k)).map(f)))
            .collect()
    };
    let reward_at = per_attempt(&|a| a.reward_sum);
    let win_at = per_attempt(&|a| f64::from(u8::from(a.won)));
    let draw_at = per_attempt(&|a| f64::from(u8::from(!a.won && a.reward_sum == 0.0)));
    let loss_at = per_attempt(&|a| f64::from(u8::from(!a.won && a.reward_sum < 0.0)));
    let invalid_rate = mean(trials.iter().flat_map(|t| {
        t.samples
            .iter()
            .filter(|s| s.kind == SampleKind::Play)
            .map(|s| f64::from(u8::from(!s.valid)))
    }));
    EvalResult {
        pass_at,
        samples_per_task,
        pass_k,
        reward_mean,
        reward_at,
        win_at,
        draw_at,
        loss_at,
        invalid_rate,
        trials,
    }
}
