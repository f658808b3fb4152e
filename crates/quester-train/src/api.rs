//! The library entry points the CLI calls: [`train`], [`resume`], [`evaluate`].

use serde::Serialize;
use std::path::Path;

use crate::config::{PolicyKind, TrainConfig};
use crate::error::TrainError;
use crate::policy::tabular::TabularPolicy;
use crate::policy::TrainablePolicy;
use crate::prompts::PromptTemplates;
use crate::rollout::EnvFactory;
use crate::run_dir::RunDir;
use crate::trainer::{evaluate_with, metrics, TrainSummary, Trainer};

/// Builds the policy a config asks for (untrained; a checkpoint may be loaded into it).
pub fn build_policy(cfg: &TrainConfig) -> Result<Box<dyn TrainablePolicy>, TrainError> {
    match cfg.model.kind {
        PolicyKind::Tabular => {
            let p = TabularPolicy::new(
                cfg.model.tabular_candidates.clone(),
                cfg.training.optimizer.lr,
                cfg.training.grad_clip,
            );
            Ok(Box::new(if cfg.model.tabular_adam {
                p.with_adam()
            } else {
                p
            }))
        }
        PolicyKind::Native => crate::policy::native::build(cfg),
    }
}

/// The environment factory of a config: the registry's env with `env.settings`, and a trial's
/// own settings (an opponent, a seat, evaluation's held-out split) merged over them.
pub fn env_factory(cfg: &TrainConfig) -> Box<EnvFactory<'static>> {
    let name = cfg.env.name.clone();
    let settings = cfg.env.settings.clone();
    Box::new(move |overrides: &toml::Table| {
        let mut merged = settings.clone();
        merged.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        quester_envs::make_env(&name, merged)
    })
}

/// Trains per `cfg` into `run_dir` (a fresh run, or with `resume` the continuation of the run
/// already there from its last checkpoint; the config must then equal the run's own).
pub fn train(cfg: &TrainConfig, run_dir: &Path, resume: bool) -> Result<TrainSummary, TrainError> {
    train_with(cfg, run_dir, resume, None)
}

/// Builds the rollout sampler of `rollout.engine = "openai"` for a policy's codec (the HTTP
/// client lives above this crate: `quester_serve::openai::rollout_sampler`).
pub type SamplerFactory<'a> =
    &'a dyn Fn(
        &TrainConfig,
        std::sync::Arc<dyn crate::policy::TextCodec>,
    ) -> Result<Box<dyn crate::policy::remote::RolloutSampler>, TrainError>;

/// [`train`], with the sampler factory that `rollout.engine = "openai"` needs.
pub fn train_with(
    cfg: &TrainConfig,
    run_dir: &Path,
    resume: bool,
    sampler: Option<SamplerFactory<'_>>,
) -> Result<TrainSummary, TrainError> {
    // Fail on a bad config (building the method validates it), env name or settings before
    // building the model.
    let templates = PromptTemplates::from_config(cfg)?;
    let method = crate::method::build(cfg, &templates)?;
    let factory = env_factory(cfg);
    factory(&toml::Table::new())?;
    factory(&cfg.eval.env_settings)?;
    let policy = build_training_policy(cfg, run_dir, sampler)?;
    let mut trainer = Trainer::open(cfg.clone(), method, policy, factory, run_dir, resume)?;
    trainer.run()
}

/// The policy a run in `run_dir` trains: the config's model, with its rollouts sampled on the
/// servers of `rollout.engine = "openai"` (adapters written under `run_dir/adapters`), which
/// needs `sampler`.
pub fn build_training_policy(
    cfg: &TrainConfig,
    run_dir: &Path,
    sampler: Option<SamplerFactory<'_>>,
) -> Result<Box<dyn crate::policy::TrainablePolicy>, TrainError> {
    let remote = cfg.rollout.engine == crate::config::RolloutEngine::Openai;
    let make = match (remote, sampler) {
        (false, _) => return build_policy(cfg),
        (true, None) => {
            return Err(TrainError::Config(
                "rollout.engine: \"openai\" needs the rollout client of the quester binary \
                 (quester train, quester experiment)"
                    .into(),
            ))
        }
        (true, Some(make)) => make,
    };
    let policy = build_policy(cfg)?;
    let codec = policy.text_codec().ok_or_else(|| {
        TrainError::Config("rollout.engine: \"openai\" needs a policy with a tokenizer".into())
    })?;
    let sampler = make(cfg, codec)?;
    Ok(Box::new(crate::policy::remote::RemoteRolloutPolicy::new(
        policy,
        sampler,
        &run_dir.join("adapters"),
    )))
}

/// Continues the run in `run_dir` with its own config.resolved.toml.
pub fn resume(run_dir: &Path) -> Result<TrainSummary, TrainError> {
    resume_with(run_dir, None)
}

/// [`resume`], with the sampler factory that `rollout.engine = "openai"` needs.
pub fn resume_with(
    run_dir: &Path,
    sampler: Option<SamplerFactory<'_>>,
) -> Result<TrainSummary, TrainError> {
    let path = RunDir::new(run_dir).config_path();
    let table = quester_config::read_table(&path)?;
    let cfg = TrainConfig::parse_table(table)?;
    train_with(&cfg, run_dir, true, sampler)
}

/// One point of a pass@k curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PassK {
    pub k: usize,
    pub value: f64,
}

/// What [`evaluate`] reports (also written as eval.json).
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub env: String,
    pub method: String,
    pub tasks: usize,
    pub num_attempts: usize,
    pub pass_at: Vec<f64>,
    /// Trials per task (n of the pass@k curve).
    pub samples_per_task: usize,
    /// The pass@k curve over each task's samples (unbiased estimator), k = 1, 2, 4, ...
    pub pass_k: Vec<PassK>,
    pub reward_mean: f64,
    /// Per attempt k: mean reward, and win / draw / loss rates, of the trials after attempt k.
    pub reward_at: Vec<f64>,
    pub win_at: Vec<f64>,
    pub draw_at: Vec<f64>,
    pub loss_at: Vec<f64>,
    pub invalid_rate: f64,
    pub seconds: f64,
}

impl EvalReport {
    /// The pass@k curve as one line: `pass@k (n=8): k=1 0.125  k=2 0.200  k=4 0.310  k=8 0.400`.
    pub fn pass_k_line(&self) -> String {
        let points: Vec<String> = self
            .pass_k
            .iter()
            .map(|p| format!("k={} {:.3}", p.k, p.value))
            .collect();
        format!(
            "pass@k (n={}): {}",
            self.samples_per_task,
            points.join("  ")
        )
    }
}

/// The per-task file [`evaluate`] writes beside eval.json (one [`crate::trainer::TaskOutcome`]
/// per line).
pub const EVAL_TASKS_FILE: &str = "eval_tasks.jsonl";

/// Evaluates the policy of `cfg` (with the weights of `checkpoint`, a checkpoint folder, when
/// given) on `eval.tasks` held-out tasks; with `out_dir`, writes eval.json, the per-task
/// outcomes ([`EVAL_TASKS_FILE`]) and every trial to trajectories.jsonl there.
pub fn evaluate(
    cfg: &TrainConfig,
    checkpoint: Option<&Path>,
    out_dir: Option<&Path>,
) -> Result<EvalReport, TrainError> {
    evaluate_subject(cfg, EvalSubject::Policy { checkpoint }, out_dir)
}

/// Who plays an evaluation.
#[derive(Debug, Clone, Copy)]
pub enum EvalSubject<'a> {
    /// The config's policy, with a checkpoint's weights when given.
    Policy { checkpoint: Option<&'a Path> },
    /// The env's expert, with probability `epsilon` of a random admissible action.
    Expert { epsilon: f64 },
}

/// [`evaluate`] the policy or the env's expert (`quester evaluate --expert`).
pub fn evaluate_subject(
    cfg: &TrainConfig,
    subject: EvalSubject<'_>,
    out_dir: Option<&Path>,
) -> Result<EvalReport, TrainError> {
    // Building the method validates the config, before the model is built.
    let templates = PromptTemplates::from_config(cfg)?;
    let method = crate::method::build(cfg, &templates)?;
    let factory = env_factory(cfg);
    factory(&cfg.eval.env_settings)?;
    let t = std::time::Instant::now();
    let ev = match subject {
        EvalSubject::Policy { checkpoint } => {
            let mut policy = build_policy(cfg)?;
            if let Some(dir) = checkpoint {
                policy.load(dir)?;
            }
            evaluate_with(policy.as_mut(), &*factory, method.as_ref(), cfg)?
        }
        EvalSubject::Expert { epsilon } => {
            let play = crate::rollout::ExpertPlay {
                epsilon,
                first_attempt_only: false,
            };
            crate::trainer::eval::evaluate_expert_with(
                &mut crate::demos::NoPolicy,
                &*factory,
                method.as_ref(),
                cfg,
                Some(play),
            )?
        }
    };
    let report = eval_report(cfg, &ev, t.elapsed().as_secs_f64());
    if let Some(dir) = out_dir {
        write_eval(dir, cfg, &report, &ev)?;
    }
    Ok(report)
}

/// The report of an evaluation that took `seconds`.
pub(crate) fn eval_report(
    cfg: &TrainConfig,
    ev: &crate::trainer::EvalResult,
    seconds: f64,
) -> EvalReport {
    EvalReport {
        env: cfg.env.name.clone(),
        method: cfg.algorithm.method.clone(),
        tasks: cfg.eval.tasks,
        num_attempts: cfg.eval.num_attempts,
        pass_at: ev.pass_at.clone(),
        samples_per_task: ev.samples_per_task,
        pass_k: ev
            .pass_k
            .iter()
            .map(|&(k, value)| PassK { k, value })
            .collect(),
        reward_mean: ev.reward_mean,
        reward_at: ev.reward_at.clone(),
        win_at: ev.win_at.clone(),
        draw_at: ev.draw_at.clone(),
        loss_at: ev.loss_at.clone(),
        invalid_rate: ev.invalid_rate,
        seconds,
    }
}

/// Writes eval.json, the per-task outcomes ([`EVAL_TASKS_FILE`]) and every trial
/// (trajectories.jsonl) into `dir`.
pub(crate) fn write_eval(
    dir: &Path,
    cfg: &TrainConfig,
    report: &EvalReport,
    ev: &crate::trainer::EvalResult,
) -> Result<(), TrainError> {
    std::fs::create_dir_all(dir).map_err(|e| TrainError::io(dir, e))?;
    let p = dir.join("eval.json");
    let text =
        serde_json::to_string_pretty(&report).map_err(|e| TrainError::Policy(e.to_string()))?;
    std::fs::write(&p, text).map_err(|e| TrainError::io(&p, e))?;
    let p = dir.join(EVAL_TASKS_FILE);
    let mut text = String::new();
    for task in crate::trainer::per_task_outcomes(&ev.trials, cfg.eval.num_attempts) {
        text.push_str(
            &serde_json::to_string(&task).map_err(|e| TrainError::Policy(e.to_string()))?,
        );
        text.push('\n');
    }
    std::fs::write(&p, text).map_err(|e| TrainError::io(&p, e))?;
    let rows: Vec<serde_json::Value> = ev
        .trials
        .iter()
        .map(|t| metrics::trajectory_row(0, "eval", t, None))
        .collect();
    let run_dir = RunDir::new(dir);
    // A second evaluation into the same folder replaces the trials, as it replaces
    // eval.json, instead of adding them to the first one's.
    let p = run_dir.trajectories();
    if p.is_file() {
        std::fs::remove_file(&p).map_err(|e| TrainError::io(&p, e))?;
    }
    run_dir.append_trajectories(&rows)?;
    Ok(())
}
