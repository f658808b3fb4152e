//! The training loop: collect trials -> advantages -> mini-batch PPO epochs -> log ->
//! evaluate -> checkpoint, resumable from the last checkpoint with identical results.

mod ahead;
pub mod eval;
pub mod metrics;

use indicatif::{ProgressBar, ProgressStyle};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::behaviour::old_logprobs;
use crate::config::TrainConfig;
use crate::error::TrainError;
use crate::method::{PassContext, TrainingMethod};
use crate::policy::{TrainSeq, TrainablePolicy, UpdateStats};
use crate::prompts::PromptTemplates;
use crate::rng::{derive, purpose};
use crate::rollout::{run_trials_with, EnvFactory, TurnContext, TurnHook};
use crate::run_dir::RunDir;
use crate::sample::{Sample, Trial};
use crate::scoring;
use ahead::Ahead;
use quester_algos::RolloutCorrection;

pub use eval::{evaluate_policy, evaluate_with, per_task_outcomes, EvalResult, TaskOutcome};

/// The end state of a training run.
#[derive(Debug, Clone)]
pub struct TrainSummary {
    /// Completed steps.
    pub steps: usize,
    /// The last metrics row (with the final evaluation when `eval.at_end`).
    pub last_metrics: Map<String, Value>,
}

/// What the updates of one step did.
struct StepUpdates {
    stats: Vec<UpdateStats>,
    /// The mean KL estimate of each mini-batch (with a KL penalty).
    kls: Vec<f64>,
    /// See [`crate::behaviour::Denominators::sampler_gap`].
    sampler_gap: Option<quester_algos::SamplerGap>,
    /// The TIS weights' token mean and truncated share (with `rollout_correction = "tis"`).
    tis: Option<quester_algos::WeightStats>,
    /// Seconds of the scoring pass for the ratio's denominators (0 when none was needed).
    rescore_seconds: f64,
}

/// A training run over any trainable policy and environment factory.
pub struct Trainer<'a> {
    cfg: TrainConfig,
    policy: Box<dyn TrainablePolicy + 'a>,
    make_env: Arc<EnvFactory<'a>>,
    method: Box<dyn TrainingMethod + 'a>,
    run: RunDir,
    step: usize,
    /// The checkpoint the run resumed from (where the adapters of the rollouts due are).
    resumed_from: Option<PathBuf>,
    /// Distinct outcomes per training task so far (saved in checkpoints).
    outcomes: quester_algos::DistinctOutcomes,
    /// Checkpoints kept on disk.
    pub keep_checkpoints: usize,
    /// Stop after this many steps in this process (tests simulate an interruption).
    pub stop_after: Option<usize>,
}

impl<'a> Trainer<'a> {
    /// Opens `run_dir`: a fresh run (the directory must not hold one), or with `resume` the
    /// continuation from its last checkpoint (a run without checkpoints starts over).
    pub fn new(
        cfg: TrainConfig,
        policy: Box<dyn TrainablePolicy + 'a>,
        make_env: Box<EnvFactory<'a>>,
        run_dir: &Path,
        resume: bool,
    ) -> Result<Self, TrainError> {
        let templates = PromptTemplates::from_config(&cfg)?;
        // Building the method validates the config.
        let method = crate::method::build(&cfg, &templates)?;
        Self::open(cfg, method, policy, make_env, run_dir, resume)
    }

    /// [`Trainer::new`] with a method of the caller's (one not in the config's registry).
    pub fn with_method(
        cfg: TrainConfig,
        method: Box<dyn TrainingMethod + 'a>,
        policy: Box<dyn TrainablePolicy + 'a>,
        make_env: Box<EnvFactory<'a>>,
        run_dir: &Path,
        resume: bool,
    ) -> Result<Self, TrainError> {
        cfg.validate()?;
        Self::open(cfg, method, policy, make_env, run_dir, resume)
    }

    /// Opens the run with a method built from `cfg` (so `cfg` is valid).
    pub(crate) fn open(
        cfg: TrainConfig,
        mut method: Box<dyn TrainingMethod + 'a>,
        mut policy: Box<dyn TrainablePolicy + 'a>,
        make_env: Box<EnvFactory<'a>>,
        run_dir: &Path,
        resume: bool,
    ) -> Result<Self, TrainError> {
        let run = RunDir::new(run_dir);
        let mut step = 0;
        let mut outcomes = quester_algos::DistinctOutcomes::new();
        let mut resumed_from = None;
        if let Some((dir, state)) = run.open(&cfg, resume)? {
            policy.load(&dir)?;
            method.restore(&crate::run_dir::load_method_state(&dir)?)?;
            outcomes = crate::run_dir::load_outcomes(&dir)?;
            step = state.step;
            tracing::info!(step, "resumed from {}", dir.display());
            resumed_from = Some(dir);
        }
        Ok(Self {
            cfg,
            policy,
            make_env: Arc::from(make_env),
            method,
            run,
            step,
            resumed_from,
            outcomes,
            keep_checkpoints: 2,
            stop_after: None,
        })
    }

    /// Completed steps.
    pub fn step(&self) -> usize {
        self.step
    }

    /// The policy being trained.
    pub fn policy(&mut self) -> &mut (dyn TrainablePolicy + 'a) {
        self.policy.as_mut()
    }

    /// The run directory.
    pub fn run_dir(&self) -> &RunDir {
        &self.run
    }

    /// Runs until `training.steps` (or `stop_after`) and returns the summary.
    pub fn run(&mut self) -> Result<TrainSummary, TrainError> {
        if self.cfg.rollout.max_staleness == 0 {
            return self.run_steps(None);
        }
        let (sampler, adapters) = self.policy.take_rollout_sampler().ok_or_else(|| {
            TrainError::Config(
                "rollout.max_staleness > 0 needs rollouts sampled on servers \
                 (rollout.engine = \"openai\")"
                    .into(),
            )
        })?;
        let Some(codec) = self.policy.text_codec() else {
            self.policy.restore_rollout_sampler(sampler);
            return Err(TrainError::Config(
                "rollout.max_staleness > 0 needs a policy with a tokenizer".into(),
            ));
        };
        let make_env = Arc::clone(&self.make_env);
        std::thread::scope(|scope| {
            let mut ahead = Ahead::start(scope, sampler, codec, make_env, &adapters);
            let result = self
                .hand_over_due_steps(&mut ahead)
                .and_then(|()| self.run_steps(Some(&mut ahead)));
            match ahead.finish() {
                Ok(sampler) => {
                    self.policy.restore_rollout_sampler(sampler);
                    result
                }
                // The run's own error comes first; a worker that panicked fails a run that did
                // not.
                Err(e) => result.and(Err(e)),
            }
        })
    }

    /// Hands the worker the steps due before the next update: steps `step ..= step + k`, with
    /// the weights each samples with (the current ones, or, after a resume, the older ones the
    /// checkpoint kept).
    fn hand_over_due_steps(&mut self, ahead: &mut Ahead<'_>) -> Result<(), TrainError> {
        let k = self.cfg.rollout.max_staleness;
        let end = (self.step + k + 1).min(self.cfg.training.steps);
        let mut written: Vec<usize> = Vec::new();
        for s in self.step..end {
            let weights = ahead::weights_of(s, k);
            let dir = ahead.adapter_dir(weights);
            if !written.contains(&weights) {
                crate::run_dir::remove_dir_if_present(&dir)?;
                if weights == self.step {
                    self.policy.export_adapter(&dir)?;
                } else {
                    let kept = self.resumed_from.as_ref().map(|c| {
                        c.join(ahead::CHECKPOINT_DIR)
                            .join(ahead::adapter_name(weights))
                    });
                    match kept.filter(|k| k.join("adapter_config.json").is_file()) {
                        Some(kept) => crate::run_dir::copy_flat(&kept, &dir)?,
                        None => {
                            return Err(TrainError::Corrupt {
                                path: self
                                    .resumed_from
                                    .as_ref()
                                    .map_or_else(String::new, |c| c.display().to_string()),
                                message: format!(
                                    "step {s} samples with the weights after update {weights}, \
                                     whose adapter this checkpoint does not hold (was it written \
                                     with another rollout.max_staleness?)"
                                ),
                            })
                        }
                    }
                }
                written.push(weights);
            }
            self.submit(ahead, s, weights, dir)?;
        }
        Ok(())
    }

    /// Hands step `step`'s rollouts to the worker, sampled with the adapter in `adapter`.
    fn submit(
        &self,
        ahead: &mut Ahead<'_>,
        step: usize,
        weights: usize,
        adapter: PathBuf,
    ) -> Result<(), TrainError> {
        ahead.submit(ahead::Job {
            step,
            weights,
            adapter,
            requests: self.method.train_requests(step),
            spec: self.method.train_spec(),
        })
    }

    /// The steps of [`Trainer::run`], with rollouts sampled ahead by `ahead` when given.
    fn run_steps(&mut self, mut ahead: Option<&mut Ahead<'_>>) -> Result<TrainSummary, TrainError> {
        let total = self.cfg.training.steps;
        let pb = if self.cfg.output.progress {
            let pb = ProgressBar::new(total as u64);
            pb.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} steps  {elapsed} < {eta}  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            pb.set_position(self.step as u64);
            pb
        } else {
            ProgressBar::hidden()
        };
        let mut done_here = 0;
        let mut last = Map::new();
        if self.step == 0 && self.cfg.eval.at_start && self.stop_after != Some(0) {
            pb.set_message("evaluating the untrained policy");
            if !self.cfg.output.progress {
                tracing::info!(
                    tasks = self.cfg.eval.tasks,
                    "evaluating the untrained policy"
                );
            }
            let row = self.eval_row(0)?;
            self.run.append_metrics(&row)?;
        }
        let budget = self.cfg.training.max_train_seconds;
        let mut spent = if budget > 0.0 {
            self.run.train_seconds()?
        } else {
            0.0
        };
        while self.step < total {
            if self.stop_after.is_some_and(|n| done_here >= n) {
                break;
            }
            if budget > 0.0 && spent >= budget {
                tracing::info!(step = self.step, spent, budget, "wall-time budget reached");
                break;
            }
            let row = self.step_with(self.step, ahead.as_deref_mut())?;
            self.step += 1;
            done_here += 1;
            if let Some(ahead) = ahead.as_deref_mut() {
                // The weights just updated sample the step k ahead.
                let next = self.step + self.cfg.rollout.max_staleness;
                if next < total {
                    let dir = ahead.adapter_dir(self.step);
                    crate::run_dir::remove_dir_if_present(&dir)?;
                    self.policy.export_adapter(&dir)?;
                    self.submit(ahead, next, self.step, dir)?;
                }
            }
            let msg = format!(
                "reward {:.3} eval pass@1 {}",
                row.get("reward_mean")
                    .and_then(Value::as_f64)
                    .unwrap_or(f64::NAN),
                row.get("eval_pass@1")
                    .and_then(Value::as_f64)
                    .map_or("-".into(), |v| format!("{v:.3}"))
            );
            if !self.cfg.output.progress {
                // No bar: a log line per step, so a run in the background shows progress.
                let seconds = row.get("time_step_s").and_then(Value::as_f64);
                tracing::info!(step = self.step, of = total, seconds, "{msg}");
            }
            pb.set_message(msg);
            pb.inc(1);
            spent += row
                .get("time_step_s")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let out_of_time = budget > 0.0 && spent >= budget;
            let every = self.cfg.training.checkpoint_every;
            if self.step == total || out_of_time || (every > 0 && self.step.is_multiple_of(every)) {
                // The adapters of the steps handed over, so that a resumed run samples them again
                // with the same weights.
                let mut due: Vec<(String, PathBuf)> = Vec::new();
                if let Some(ahead) = ahead.as_deref() {
                    for (_, w) in ahead.due() {
                        let name = ahead::adapter_name(w);
                        if due.iter().all(|(n, _)| *n != name) {
                            due.push((name, ahead.adapter_dir(w)));
                        }
                    }
                }
                self.run.save_checkpoint(
                    self.step,
                    self.policy.as_ref(),
                    &self.method.state(),
                    &self.outcomes,
                    self.keep_checkpoints,
                    (ahead::CHECKPOINT_DIR, &due),
                )?;
            }
            last = row;
        }
        pb.finish_and_clear();
        if last.is_empty() {
            last = self.run.read_metrics()?.pop().unwrap_or_default();
        }
        Ok(TrainSummary {
            steps: self.step,
            last_metrics: last,
        })
    }

    /// An evaluation-only metrics row logged at `step` (0 = before training).
    fn eval_row(&mut self, step: usize) -> Result<Map<String, Value>, TrainError> {
        let t = Instant::now();
        let ev = evaluate_with(
            self.policy.as_mut(),
            &*self.make_env,
            self.method.as_ref(),
            &self.cfg,
        )?;
        let mut row = Map::new();
        row.insert("step".into(), json!(step));
        row.insert("kind".into(), json!("eval"));
        metrics::add_eval(&mut row, &ev);
        row.insert("time_eval_s".into(), json!(t.elapsed().as_secs_f64()));
        Ok(row)
    }

    /// One training step (index `step`, 0-based): collect, score, update, evaluate, log. With
    /// `rollout.max_staleness > 0` steps go through [`Trainer::run`], which samples ahead.
    pub fn train_step(&mut self, step: usize) -> Result<Map<String, Value>, TrainError> {
        if self.cfg.rollout.max_staleness > 0 {
            return Err(TrainError::Config(
                "rollout.max_staleness > 0: steps sample ahead of the updates, through \
                 Trainer::run"
                    .into(),
            ));
        }
        self.step_with(step, None)
    }

    /// The step's trials: sampled now with the current weights, or taken from `ahead`.
    fn rollouts(
        &mut self,
        step: usize,
        ahead: Option<&mut Ahead<'_>>,
    ) -> Result<(Vec<Trial>, Option<ahead::Sampled>), TrainError> {
        if let Some(ahead) = ahead {
            let mut sampled = ahead.take(step)?;
            let trials = std::mem::take(&mut sampled.trials);
            return Ok((trials, Some(sampled)));
        }
        let requests = self.method.train_requests(step);
        let spec = self.method.train_spec();
        let method = &self.method;
        let hook = |turns: &[TurnContext<'_>]| method.turn_guidance(step, turns);
        let hook: Option<&TurnHook<'_>> = method.guides_turns(step).then_some(&hook);
        let trials = run_trials_with(
            self.policy.as_mut(),
            &*self.make_env,
            &requests,
            &spec,
            None,
            hook,
        )?;
        Ok((trials, None))
    }

    /// [`Trainer::train_step`], with the trials from `ahead` when given.
    fn step_with(
        &mut self,
        step: usize,
        ahead: Option<&mut Ahead<'_>>,
    ) -> Result<Map<String, Value>, TrainError> {
        let t_start = Instant::now();
        let (mut trials, sampled) = self.rollouts(step, ahead)?;
        // Sampled ahead: the time the trainer waited for the rollouts.
        let t_rollout = t_start.elapsed().as_secs_f64();

        let t_passes = Instant::now();
        self.method.extra_passes(
            step,
            &mut trials,
            &mut PassContext {
                policy: self.policy.as_mut(),
                make_env: &*self.make_env,
            },
        )?;
        let t_passes = t_passes.elapsed().as_secs_f64();

        let t1 = Instant::now();
        for t in &mut trials {
            self.method.shape(&mut t.samples);
        }
        let mut samples: Vec<Sample> = trials
            .iter()
            .flat_map(|t| t.samples.iter().filter(|s| s.role.is_trained()).cloned())
            .collect();
        self.set_training_contexts(&mut samples)?;
        let adv = scoring::advantages(&samples, &self.method.advantage_config());
        let t_scoring = t1.elapsed().as_secs_f64();

        let t2 = Instant::now();
        let mut stats: Vec<UpdateStats> = Vec::new();
        let mut kls: Vec<f64> = Vec::new();
        let mut sampler_gap = None;
        let mut tis = None;
        let mut rescore_seconds = 0.0;
        let mut skipped = 0usize;
        let advantages = match &adv {
            Ok(a) => {
                StepUpdates {
                    stats,
                    kls,
                    sampler_gap,
                    tis,
                    rescore_seconds,
                } = self.update(&samples, &a.advantage, step)?;
                skipped += stats.iter().filter(|s| s.skipped_nonfinite).count();
                Some(a.advantage.clone())
            }
            Err(e) => {
                tracing::warn!(step, "advantages not computable, update skipped: {e}");
                skipped += 1;
                None
            }
        };
        let t_training = t2.elapsed().as_secs_f64();
        self.method.after_step(step, &trials);

        let mut row = metrics::train_row(
            step,
            &trials,
            &samples,
            advantages.as_deref(),
            &stats,
            self.cfg.algorithm.num_attempts,
        );
        metrics::add_per_opponent(&mut row, &trials);
        let new_outcomes = trials
            .iter()
            .flat_map(|t| {
                let task = t.task_seed.to_string();
                t.attempts.iter().map(move |a| (task.clone(), a))
            })
            .filter(|(task, a)| self.outcomes.record(task, &a.outcome))
            .count();
        row.insert(
            "distinct_outcomes".into(),
            json!(self.outcomes.mean_per_task()),
        );
        row.insert("new_outcomes".into(), json!(new_outcomes));
        self.method.train_metrics(&trials, &mut row);
        row.insert("skipped_updates".into(), json!(skipped));
        if !kls.is_empty() {
            row.insert(
                "kl".into(),
                json!(kls.iter().sum::<f64>() / kls.len() as f64),
            );
        }
        if let Some(gap) = sampler_gap {
            row.insert("sampler_logp_gap".into(), json!(gap.mean_abs_logp));
            row.insert("sampler_kl".into(), json!(gap.kl));
        }
        if let Some(w) = tis {
            row.insert("tis_weight_mean".into(), json!(w.mean));
            row.insert("tis_truncated_fraction".into(), json!(w.truncated_fraction));
        }
        row.insert("time_rollout_s".into(), json!(t_rollout));
        // Part of the rollout time: the new adapter loaded into the rollout servers.
        let mut t_sync = self.policy.take_weight_sync_seconds();
        if let Some(sampled) = &sampled {
            // Sampled ahead: the worker's own seconds on the step, and the updates its weights
            // were behind.
            t_sync = sampled.sync_seconds;
            row.insert(
                "time_sampling_ahead_s".into(),
                json!(sampled.sampling_seconds),
            );
            row.insert("rollout_staleness".into(), json!(step - sampled.weights));
        }
        if self.cfg.rollout.engine == crate::config::RolloutEngine::Openai {
            row.insert("time_weight_sync_s".into(), json!(t_sync));
        }
        row.insert("time_extra_passes_s".into(), json!(t_passes));
        row.insert("time_scoring_s".into(), json!(t_scoring));
        row.insert("time_training_s".into(), json!(t_training));
        // Part of the training time: the ratio's denominators rescored before the updates.
        row.insert("time_rescore_s".into(), json!(rescore_seconds));

        let last = step + 1 == self.cfg.training.steps;
        let every = self.cfg.eval.every;
        if (every > 0 && (step + 1).is_multiple_of(every)) || (last && self.cfg.eval.at_end) {
            let t3 = Instant::now();
            let ev = evaluate_with(
                self.policy.as_mut(),
                &*self.make_env,
                self.method.as_ref(),
                &self.cfg,
            )?;
            metrics::add_eval(&mut row, &ev);
            row.insert("time_eval_s".into(), json!(t3.elapsed().as_secs_f64()));
        }
        row.insert("time_step_s".into(), json!(t_start.elapsed().as_secs_f64()));

        let n = self
            .cfg
            .output
            .trajectories_per_step
            .min(self.cfg.rollout.tasks_per_step);
        // The first trial of each logged task, and every trial of it a method revised (HeRL's
        // hindsight slot, its logged rewrites), so the browser shows what the method did.
        let g = self.cfg.rollout.group_size;
        let logged: Vec<usize> = (0..n)
            .flat_map(|t| {
                let trials = &trials;
                (t * g..((t + 1) * g).min(trials.len())).filter(move |&i| {
                    i == t * g
                        || trials[i]
                            .samples
                            .iter()
                            .any(|s| s.role != crate::sample::SampleRole::Policy)
                })
            })
            .collect();
        let traj: Vec<Value> = logged
            .into_iter()
            .map(|i| {
                let offset: usize = trials[..i].iter().map(metrics::trained_samples).sum();
                metrics::trajectory_row(
                    step,
                    "train",
                    &trials[i],
                    advantages.as_deref().map(|a| &a[offset..]),
                )
            })
            .collect();
        self.run.append_trajectories(&traj)?;
        self.run.append_metrics(&row)?;
        Ok(row)
    }

    /// Encodes the training context of every sample a method trains under another one.
    fn set_training_contexts(&mut self, samples: &mut [Sample]) -> Result<(), TrainError> {
        for s in samples {
            if let Some((messages, prefix)) = self.method.training_context(s) {
                s.train_prompt_ids = Some(self.policy.encode(&messages, &prefix)?);
            }
        }
        Ok(())
    }

    fn update(
        &mut self,
        samples: &[Sample],
        advantage: &[f64],
        step: usize,
    ) -> Result<StepUpdates, TrainError> {
        let t = self.cfg.training.clone();
        let kl_on = self.cfg.algorithm.loss.kl_coef > 0.0;
        let mut kls = Vec::new();
        let lcfg = scoring::loss_config(&self.cfg.algorithm.loss);
        let entropy_coef = self.cfg.algorithm.loss.entropy_coef;
        let mut stats = Vec::new();
        let t_rescore = Instant::now();
        let denominators =
            old_logprobs(self.policy.as_mut(), samples, self.cfg.training.mini_batch)?;
        let rescore_seconds = t_rescore.elapsed().as_secs_f64();
        let (old_all, is_current) = (denominators.old, denominators.current);
        let tis_cap = self.cfg.algorithm.loss.tis_cap;
        let is_weights: Option<Vec<Vec<f64>>> =
            (self.cfg.algorithm.loss.rollout_correction == RolloutCorrection::Tis).then(|| {
                samples
                    .iter()
                    .zip(&old_all)
                    .map(|(s, old)| {
                        let sampler: Vec<f64> = s.logprobs.iter().map(|&x| f64::from(x)).collect();
                        let mut w = quester_algos::truncated_is_weights(old, &sampler, tis_cap);
                        // A token at temperature 0 was not drawn (forced, or greedy): no
                        // sampling distribution to correct for.
                        for (w, &t) in w.iter_mut().zip(&s.temperatures) {
                            if t == 0.0 {
                                *w = 1.0;
                            }
                        }
                        w
                    })
                    .collect()
            });
        let current_f32: Vec<Vec<f32>> = old_all
            .iter()
            .map(|v| v.iter().map(|&x| x as f32).collect())
            .collect();
        // Until the first update of this step the old log-probs of every sample not kept at its
        // behaviour values are the current ones: the policy may skip its scoring pass for the
        // first mini-batch.
        let mut fresh = true;
        for epoch in 0..t.ppo_epochs {
            let mut order: Vec<usize> = (0..samples.len()).collect();
            let mut rng = ChaCha8Rng::seed_from_u64(derive(
                t.seed,
                &[purpose::SHUFFLE, step as u64, epoch as u64],
            ));
            order.shuffle(&mut rng);
            for chunk in order.chunks(t.mini_batch) {
                let seqs: Vec<TrainSeq<'_>> = chunk
                    .iter()
                    .map(|&i| TrainSeq {
                        current_logprobs: (fresh && is_current[i])
                            .then_some(current_f32[i].as_slice()),
                        ..train_seq(&samples[i])
                    })
                    .collect();
                fresh = false;
                let old: Vec<Vec<f64>> = chunk.iter().map(|&i| old_all[i].clone()).collect();
                let adv: Vec<f64> = chunk.iter().map(|&i| advantage[i]).collect();
                let weights: Option<Vec<Vec<f64>>> = is_weights
                    .as_ref()
                    .map(|w| chunk.iter().map(|&i| w[i].clone()).collect());
                let objectives: Vec<_> = chunk
                    .iter()
                    .map(|&i| scoring::objective(&samples[i]))
                    .collect();
                let reference = if kl_on {
                    Some(self.policy.reference_logprobs(&seqs)?.ok_or_else(|| {
                        TrainError::Policy(
                            "algorithm.loss.kl_coef > 0 needs a reference model, which this \
                             policy does not have (set algorithm.loss.kl_coef = 0)"
                                .into(),
                        )
                    })?)
                } else {
                    None
                };
                let mut kl = f64::NAN;
                let st = self.policy.update(
                    &seqs,
                    &mut |new: &[Vec<f64>]| {
                        let (lv, k) = scoring::ppo_loss(
                            new,
                            &old,
                            reference.as_deref(),
                            weights.as_deref(),
                            &adv,
                            &objectives,
                            &lcfg,
                        );
                        kl = k;
                        lv
                    },
                    entropy_coef,
                )?;
                if kl_on {
                    kls.push(kl);
                }
                if st.skipped_nonfinite {
                    tracing::warn!(
                        step,
                        epoch,
                        loss = st.loss,
                        "non-finite loss: mini-batch update skipped"
                    );
                }
                stats.push(st);
            }
        }
        Ok(StepUpdates {
            stats,
            kls,
            sampler_gap: denominators.sampler_gap,
            tis: is_weights
                .as_deref()
                .map(|w| quester_algos::weight_stats(w, tis_cap)),
            rescore_seconds,
        })
    }
}

/// A sample as a training sequence in its training context (no current log-probs).
fn train_seq(s: &Sample) -> TrainSeq<'_> {
    TrainSeq {
        prompt_ids: s.training_prompt_ids(),
        response_ids: &s.response_ids,
        current_logprobs: None,
    }
}
