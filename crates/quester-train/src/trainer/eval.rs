//! Evaluation: one trial per held-out task, pass@1..k over attempts.

use crate::config::TrainConfig;
use crate::error::TrainError;
use crate::policy::Policy;
use crate::prompts::PromptTemplates;
use crate::rng::{derive, purpose};
use crate::rollout::{run_trials, EnvFactory, TrialRequest};
use crate::sample::{SampleKind, Trial};

/// The outcome of an evaluation.
#[derive(Debug, Clone)]
pub struct EvalResult {
    /// pass@k for k = 1..=eval.num_attempts.
    pub pass_at: Vec<f64>,
    /// Mean reward sum of an attempt.
    pub reward_mean: f64,
    /// Share of play responses that were invalid actions.
    pub invalid_rate: f64,
    pub trials: Vec<Trial>,
}

/// Plays `eval.tasks` evaluation tasks (seeds from `env.eval_seed_base`), one trial each, with
/// the same sampling streams at every call (results at different steps are comparable).
pub fn evaluate_policy(
    policy: &mut dyn Policy,
    make_env: &EnvFactory<'_>,
    cfg: &TrainConfig,
    templates: &PromptTemplates,
) -> Result<EvalResult, TrainError> {
    let spec = super::eval_spec(cfg, templates);
    let requests: Vec<TrialRequest> = (0..cfg.eval.tasks)
        .map(|i| TrialRequest {
            task_id: format!("eval{i}"),
            task_seed: cfg.env.eval_seed_base + i as u64,
            trial: 0,
            gen_seed: derive(cfg.training.seed, &[purpose::EVAL_GEN, i as u64]),
        })
        .collect();
    let trials = run_trials(policy, make_env, &requests, &spec, None)?;
    let wins: Vec<Vec<bool>> = trials
        .iter()
        .map(|t| t.attempts.iter().map(|a| a.won).collect())
        .collect();
    let pass_at = quester_algos::pass_at_k(&wins, cfg.eval.num_attempts);
    let attempts: Vec<f64> = trials
        .iter()
        .flat_map(|t| t.attempts.iter().map(|a| a.reward_sum))
        .collect();
    let reward_mean = attempts.iter().sum::<f64>() / attempts.len().max(1) as f64;
    let plays: Vec<bool> = trials
        .iter()
        .flat_map(|t| {
            t.samples
                .iter()
                .filter(|s| s.kind == SampleKind::Play)
                .map(|s| s.valid)
        })
        .collect();
    let invalid_rate = plays.iter().filter(|v| !**v).count() as f64 / plays.len().max(1) as f64;
    Ok(EvalResult {
        pass_at,
        reward_mean,
        invalid_rate,
        trials,
    })
}
