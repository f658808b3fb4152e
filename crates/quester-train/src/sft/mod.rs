//! Supervised fine-tuning (`quester sft`): the native model trained on chat examples with the
//! loss on assistant tokens only, LoRA or full as `[model]` says, and a run directory like
//! `quester train`'s: config.resolved.toml, metrics.jsonl / .csv, atomic checkpoints in the
//! native policy's format and exact resume. Its checkpoint is what `model.init` of a training
//! preset, `quester evaluate --checkpoint`, `serve` and `export` start from.
//!
//! - [`data`]: reading the JSONL, the validation split by episode.
//! - [`encode`]: rendering a conversation with the model's chat template and marking the
//!   assistant tokens.
//! - [`plan`]: packing examples into optimiser steps under a token budget.
//!
//! A step's loss is the mean negative log-likelihood of its assistant tokens (quester-model's
//! training step with every coefficient 1: `-(sum logp) / tokens`), accumulated over
//! micro-batches of `training.micro_batch_tokens`.

pub mod data;
pub mod encode;
pub mod plan;

use std::path::{Path, PathBuf};
use std::time::Instant;

use quester_model::micro_batch::MicroBatchLimits;
use quester_model::train_step::{TrainBatch, TrainSequence};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::config::{Overlong, PolicyKind, TrainConfig};
use crate::error::TrainError;
use crate::policy::native::NativePolicy;
use crate::run_dir::RunDir;
use encode::Encoded;

/// Micro-batch budget when `training.micro_batch_tokens` is 0.
const DEFAULT_MICRO_BATCH_TOKENS: usize = 2048;
/// Checkpoints kept (the newest ones).
const KEEP_CHECKPOINTS: usize = 2;

/// What a supervised run did.
#[derive(Debug, Clone, Serialize)]
pub struct SftSummary {
    pub run_dir: PathBuf,
    /// Optimiser steps done (over every process of a resumed run).
    pub steps: usize,
    pub train_examples: usize,
    pub val_examples: usize,
    /// Examples left out or cut for being longer than `sft.max_tokens`.
    pub skipped_overlong: usize,
    pub truncated_overlong: usize,
    /// Validation loss (mean NLL per assistant token) at the end; None without a held-out set.
    pub val_loss: Option<f64>,
    /// Assistant tokens trained per second over this process's steps.
    pub target_tokens_per_s: f64,
    /// All tokens (prompt included) run per second over this process's steps.
    pub tokens_per_s: f64,
    pub seconds: f64,
    /// The held-out evaluation at the end (`eval.at_end`), as `quester evaluate` reports it.
    pub eval: Option<crate::api::EvalReport>,
}

/// The examples, encoded, split into training and validation.
struct Dataset {
    train: Vec<Encoded>,
    val: Vec<Encoded>,
    skipped: usize,
    truncated: usize,
}

fn err<E: std::fmt::Display>(e: E) -> TrainError {
    TrainError::Policy(e.to_string())
}

/// Reads and encodes `cfg.sft.data`; an example that cannot be encoded names its line.
fn load_dataset(
    cfg: &TrainConfig,
    template: &quester_model::ChatTemplate,
    tokenizer: &quester_model::Tokenizer,
) -> Result<Dataset, TrainError> {
    let s = &cfg.sft;
    let path = Path::new(&s.data);
    let examples = data::read_examples(path).map_err(|e| TrainError::Config(e.to_string()))?;
    let mut out = Dataset {
        train: Vec::new(),
        val: Vec::new(),
        skipped: 0,
        truncated: 0,
    };
    for ex in &examples {
        let mut enc = encode::encode(&ex.messages, template, tokenizer)
            .map_err(|e| TrainError::Config(format!("{}:{}: {e}", path.display(), ex.line)))?;
        if enc.ids.len() > s.max_tokens {
            match s.overlong {
                Overlong::Error => {
                    return Err(TrainError::Config(format!(
                        "{}:{}: the example is {} tokens, longer than sft.max_tokens = {}; raise \
                         it, or set sft.overlong = \"skip\" or \"truncate\"",
                        path.display(),
                        ex.line,
                        enc.ids.len(),
                        s.max_tokens
                    )));
                }
                Overlong::Skip => {
                    out.skipped += 1;
                    continue;
                }
                Overlong::Truncate => {
                    enc.truncate(s.max_tokens);
                    out.truncated += 1;
                    if enc.targets() == 0 {
                        out.skipped += 1;
                        continue;
                    }
                }
            }
        }
        if data::is_validation(&ex.group, cfg.training.seed, s.val_fraction) {
            out.val.push(enc);
        } else {
            out.train.push(enc);
        }
    }
    if out.skipped + out.truncated > 0 {
        tracing::warn!(
            skipped = out.skipped,
            truncated = out.truncated,
            max_tokens = s.max_tokens,
            "examples longer than sft.max_tokens"
        );
    }
    if out.train.is_empty() {
        return Err(TrainError::Config(format!(
            "{}: no training example left (validation took {}, overlong {})",
            path.display(),
            out.val.len(),
            out.skipped
        )));
    }
    Ok(out)
}

/// An encoded example as a training sequence: every assistant token has coefficient 1.
fn sequence(e: &Encoded) -> TrainSequence {
    TrainSequence {
        ids: e.ids.clone(),
        trained: e.trained.clone(),
        advantages: e.trained.iter().map(|&t| f32::from(u8::from(t))).collect(),
        old_logprobs: vec![0.0; e.ids.len()],
    }
}

/// `seqs` in token order (shared prefixes side by side) and the micro-batches of them under
/// `limits` (the native policy's plan).
fn micro_batches(
    mut seqs: Vec<TrainSequence>,
    limits: MicroBatchLimits,
) -> (Vec<TrainSequence>, Vec<std::ops::Range<usize>>) {
    seqs.sort_by(|a, b| a.ids.cmp(&b.ids));
    let refs: Vec<&TrainSequence> = seqs.iter().collect();
    let plan = crate::policy::native::micro_batches(&refs, limits);
    (seqs, plan)
}

/// Mean NLL per assistant token of `examples` under the current weights (no gradient).
fn validation_loss(
    policy: &NativePolicy,
    examples: &[Encoded],
    limits: MicroBatchLimits,
) -> Result<f64, TrainError> {
    let model = &policy.step.model().0;
    let (mut sum, mut n) = (0.0f64, 0usize);
    let (seqs, plan) = micro_batches(examples.iter().map(sequence).collect(), limits);
    for range in plan {
        let tb =
            TrainBatch::from_sequences(&seqs[range], policy.pad_id, model.device()).map_err(err)?;
        let lp = model
            .token_logprobs_detached(&tb.input_ids, &tb.attention_mask, tb.targets_from)
            .map_err(err)?
            .to_vec2::<f32>()
            .map_err(err)?;
        let mask = tb.loss_mask.to_vec2::<f32>().map_err(err)?;
        for (row, m) in lp.iter().zip(&mask) {
            for (&l, &k) in row.iter().zip(m) {
                if k > 0.0 {
                    sum -= f64::from(l);
                    n += 1;
                }
            }
        }
    }
    Ok(sum / n.max(1) as f64)
}

/// Trains per `cfg` (its `[sft]` table) into `run_dir`; with `resume`, continues the run there
/// from its last checkpoint (the config must equal the run's own).
pub fn sft(cfg: &TrainConfig, run_dir: &Path, resume: bool) -> Result<SftSummary, TrainError> {
    cfg.sft.validate().map_err(TrainError::Config)?;
    if cfg.model.kind != PolicyKind::Native {
        return Err(TrainError::Config(
            "model.kind: supervised fine-tuning trains the native model (\"native\")".into(),
        ));
    }
    // The evaluation at the end plays the config's method: check it before the long part.
    let templates = crate::prompts::PromptTemplates::from_config(cfg)?;
    let method = crate::method::build(cfg, &templates)?;
    let t0 = Instant::now();
    let loaded = crate::policy::native::load_model(cfg)?;
    // The schedule needs the step count, which needs the tokenizer: tokenise first, then build
    // the optimiser.
    let ds = load_dataset(cfg, &loaded.chat_template, &loaded.tokenizer)?;
    let lengths: Vec<usize> = ds.train.iter().map(|e| e.ids.len()).collect();
    let mut steps = plan::plan_steps(
        &lengths,
        cfg.sft.step_tokens,
        cfg.sft.epochs,
        cfg.training.seed,
    );
    if cfg.sft.max_steps > 0 {
        steps.truncate(cfg.sft.max_steps);
    }
    let mut schedule = cfg.training.lr_schedule.clone();
    if schedule.total_steps == 0 {
        schedule.total_steps = steps.len() as u64;
    }
    let mut policy = NativePolicy::from_loaded(cfg, loaded, schedule)?;
    policy.step.set_entropy_coef(0.0).map_err(err)?;
    let limits = MicroBatchLimits::tokens(if cfg.training.micro_batch_tokens > 0 {
        cfg.training.micro_batch_tokens
    } else {
        DEFAULT_MICRO_BATCH_TOKENS
    });
    tracing::info!(
        train = ds.train.len(),
        val = ds.val.len(),
        steps = steps.len(),
        target_tokens = ds.train.iter().map(Encoded::targets).sum::<usize>() * cfg.sft.epochs,
        seconds = t0.elapsed().as_secs_f64(),
        "sft: data ready"
    );

    let run = RunDir::new(run_dir);
    let mut done = 0;
    if let Some((dir, state)) = run.open(cfg, resume)? {
        crate::policy::TrainablePolicy::load(&mut policy, &dir)?;
        done = state.step;
        tracing::info!(step = done, "sft: resumed from {}", dir.display());
    }

    let bar = (cfg.output.progress && done < steps.len()).then(|| {
        let pb = indicatif::ProgressBar::new(steps.len() as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "sft {bar:30} {pos}/{len} steps  {msg}  eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        pb.set_position(done as u64);
        pb
    });
    let started = Instant::now();
    let (mut run_tokens, mut run_targets) = (0usize, 0usize);
    let log_every = (steps.len() / 20).max(1);
    let mut last_val = None;
    let per_epoch = steps.len().div_ceil(cfg.sft.epochs.max(1));
    for (k, step) in steps.iter().enumerate().skip(done) {
        let st = Instant::now();
        let targets: usize = step.iter().map(|&i| ds.train[i].targets()).sum();
        let tokens: usize = step.iter().map(|&i| ds.train[i].ids.len()).sum();
        let (seqs, plan) = micro_batches(
            step.iter().map(|&i| sequence(&ds.train[i])).collect(),
            limits,
        );
        for range in plan {
            let device = policy.step.model().0.device();
            let tb =
                TrainBatch::from_sequences(&seqs[range], policy.pad_id, device).map_err(err)?;
            policy.step.accumulate(&tb, targets).map_err(err)?;
        }
        let stats = policy.step.apply().map_err(err)?;
        if !policy.step.model().0.lora_attached {
            policy.forget_decode_weights();
        }
        if stats.skipped_nan {
            tracing::warn!(
                step = k + 1,
                "sft: non-finite loss or gradient; update skipped"
            );
        }
        let secs = st.elapsed().as_secs_f64();
        run_tokens += tokens;
        run_targets += targets;
        let n = k + 1;
        let mut row = Map::new();
        row.insert("step".into(), json!(n));
        row.insert("kind".into(), json!("sft"));
        row.insert("epoch".into(), json!(k / per_epoch.max(1)));
        row.insert("loss".into(), json!(stats.loss));
        row.insert("grad_norm".into(), json!(stats.grad_norm));
        row.insert("lr".into(), json!(stats.lr));
        row.insert("samples".into(), json!(step.len()));
        row.insert("target_tokens".into(), json!(targets));
        row.insert("tokens".into(), json!(tokens));
        row.insert("tokens_per_s".into(), json!(tokens as f64 / secs.max(1e-9)));
        row.insert("skipped_updates".into(), json!(u8::from(stats.skipped_nan)));
        row.insert("time_step_s".into(), json!(secs));
        let validate = !ds.val.is_empty()
            && (n == steps.len() || (cfg.sft.val_every > 0 && n % cfg.sft.val_every == 0));
        if validate {
            let v = validation_loss(&policy, &ds.val, limits)?;
            row.insert("val_loss".into(), json!(v));
            last_val = Some(v);
        }
        run.append_metrics(&row)?;
        if let Some(pb) = &bar {
            pb.set_position(n as u64);
            pb.set_message(format!("loss {:.3}", stats.loss));
        }
        if n % log_every == 0 || n == steps.len() {
            tracing::info!(
                step = n,
                of = steps.len(),
                loss = stats.loss,
                val_loss = last_val,
                tokens_per_s = run_tokens as f64 / started.elapsed().as_secs_f64().max(1e-9),
                "sft"
            );
        }
        let every = cfg.training.checkpoint_every;
        if n == steps.len() || (every > 0 && n % every == 0) {
            run.save_checkpoint(
                n,
                &policy,
                &Value::Null,
                &quester_algos::DistinctOutcomes::new(),
                KEEP_CHECKPOINTS,
                ("", &[]),
            )?;
        }
    }
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    let secs = started.elapsed().as_secs_f64();
    if last_val.is_none() && !ds.val.is_empty() {
        last_val = Some(validation_loss(&policy, &ds.val, limits)?);
    }
    let eval = if cfg.eval.at_end {
        Some(evaluate_at_end(cfg, &mut policy, method.as_ref(), &run)?)
    } else {
        None
    };
    Ok(SftSummary {
        run_dir: run_dir.to_path_buf(),
        steps: steps.len(),
        train_examples: ds.train.len(),
        val_examples: ds.val.len(),
        skipped_overlong: ds.skipped,
        truncated_overlong: ds.truncated,
        val_loss: last_val,
        target_tokens_per_s: run_targets as f64 / secs.max(1e-9),
        tokens_per_s: run_tokens as f64 / secs.max(1e-9),
        seconds: t0.elapsed().as_secs_f64(),
        eval,
    })
}

/// The config's held-out evaluation with the fine-tuned weights, written as eval.json (and the
/// per-task outcomes) in the run directory.
fn evaluate_at_end(
    cfg: &TrainConfig,
    policy: &mut NativePolicy,
    method: &dyn crate::method::TrainingMethod,
    run: &RunDir,
) -> Result<crate::api::EvalReport, TrainError> {
    let factory = crate::api::env_factory(cfg);
    let t = Instant::now();
    let ev = crate::trainer::evaluate_with(policy, &*factory, method, cfg)?;
    let report = crate::api::eval_report(cfg, &ev, t.elapsed().as_secs_f64());
    crate::api::write_eval(run.path(), cfg, &report, &ev)?;
    tracing::info!(
        pass1 = report.pass_at.first().copied().unwrap_or(0.0),
        invalid_rate = report.invalid_rate,
        "sft: held-out evaluation"
    );
    Ok(report)
}

/// Continues the supervised run in `run_dir` with its own config.
pub fn resume_sft(run_dir: &Path) -> Result<SftSummary, TrainError> {
    let path = RunDir::new(run_dir).config_path();
    let table = quester_config::read_table(&path)?;
    let cfg = TrainConfig::parse_table(table)?;
    sft(&cfg, run_dir, true)
}
