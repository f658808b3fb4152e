//! One policy-gradient training step: forward (token log-probs), loss as tensor ops, backward,
//! global grad-norm clipping and a fused AdamW update.
//!
//! Losses (all token-mean: summed over trained tokens, divided by the token count of the whole
//! mini-batch, so micro-batches accumulate to the same gradient as one large batch):
//! - `ppo_clip`: PPO's clipped surrogate with dual clip, as in verl's `compute_policy_loss`:
//!   `r = exp(clamp(logp - old_logp, -20, 20))`, `l1 = -A r`, `l2 = -A clamp(r, 1 - lo, 1 + hi)`,
//!   `l = max(l1, l2)`, and for `A < 0` additionally `l = min(l, -A c)`.
//! - `coefficients`: `-(coef * logp)`; with `coef = -dL/dlogp` computed outside (for any loss the
//!   caller derives in plain Rust, e.g. in quester-algos) its gradient is that loss's gradient.
//!   The batch's `advantages` hold the coefficients.
//!
//! A NaN/Inf loss or gradient norm skips the update (the optimiser step count does not advance)
//! and is reported in [`StepStats::skipped_nan`] and by `tracing::warn!`.

use crate::optim::{clip_scale, global_grad_norm, AdamW, AdamWConfig, LrSchedule, OptimError};
use candle_core::backprop::GradStore;
use candle_core::{DType, Device, Tensor, Var};
use serde::{Deserialize, Serialize};

/// Errors of a training step.
#[derive(Debug, thiserror::Error)]
pub enum TrainStepError {
    #[error("training batch: {0}")]
    Batch(String),
    #[error("training config: {0}")]
    Config(String),
    #[error("model: {0}")]
    Model(String),
    #[error(transparent)]
    Optim(#[from] OptimError),
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

/// What a training step needs from a model.
pub trait TrainableModel {
    /// `[B, T - targets_from]`: column c is `ln p(ids[b, targets_from + c] | ids[b, ..])`,
    /// differentiable with respect to [`TrainableModel::trainable_vars`].
    fn token_logprobs(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
    ) -> Result<Tensor, TrainStepError>;
    /// The variables the optimiser updates, with unique names.
    fn trainable_vars(&self) -> Vec<(String, Var)>;
    /// [`TrainableModel::token_logprobs`] plus, where the model can give it, the entropy of the
    /// predicted distribution at the same positions (differentiable; for the entropy bonus).
    fn token_logprobs_and_entropy(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
    ) -> Result<(Tensor, Option<Tensor>), TrainStepError> {
        Ok((self.token_logprobs(ids, mask, targets_from)?, None))
    }
    /// [`TrainableModel::token_logprobs_and_entropy`] where only the positions with a non-zero
    /// `keep` [B, T - targets_from] (the loss mask) are read: a model may skip the others and
    /// return 0 there.
    fn token_logprobs_and_entropy_at(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
        keep: &Tensor,
    ) -> Result<(Tensor, Option<Tensor>), TrainStepError> {
        let _ = keep;
        self.token_logprobs_and_entropy(ids, mask, targets_from)
    }
}

impl TrainableModel for crate::model::Model {
    fn token_logprobs(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
    ) -> Result<Tensor, TrainStepError> {
        crate::model::Model::token_logprobs(self, ids, mask, targets_from)
            .map_err(|e| TrainStepError::Model(e.to_string()))
    }

    fn trainable_vars(&self) -> Vec<(String, Var)> {
        crate::model::Model::trainable_vars(self)
    }

    fn token_logprobs_and_entropy(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
    ) -> Result<(Tensor, Option<Tensor>), TrainStepError> {
        let (lp, ent) =
            crate::model::Model::token_logprobs_and_entropy(self, ids, mask, targets_from)
                .map_err(|e| TrainStepError::Model(e.to_string()))?;
        Ok((lp, Some(ent)))
    }

    fn token_logprobs_and_entropy_at(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
        keep: &Tensor,
    ) -> Result<(Tensor, Option<Tensor>), TrainStepError> {
        let (lp, ent) =
            crate::model::Model::token_logprobs_and_entropy_at(self, ids, mask, targets_from, keep)
                .map_err(|e| TrainStepError::Model(e.to_string()))?;
        Ok((lp, Some(ent)))
    }
}

/// The policy loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// PPO clipped surrogate with dual clip (LaMer's loss).
    #[default]
    PpoClip,
    /// `-(coef * logp)` with caller-computed coefficients in `advantages`.
    Coefficients,
}

/// Training-step configuration. Defaults are LaMer's (clip 0.2/0.2, dual clip 3, grad-norm clip
/// 1.0, AdamW lr 1e-6 constant, weight decay 0.01).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainStepConfig {
    /// `ppo_clip` or `coefficients`.
    pub loss: LossKind,
    /// Lower ratio clip epsilon.
    pub clip_low: f64,
    /// Upper ratio clip epsilon.
    pub clip_high: f64,
    /// Dual-clip constant c (> 1) for negative advantages; 0 turns it off.
    pub dual_clip: f64,
    /// Global grad-norm clip; 0 turns clipping off.
    pub max_grad_norm: f64,
    /// Optimiser hyper-parameters.
    pub optimizer: AdamWConfig,
    /// Learning-rate schedule.
    pub schedule: LrSchedule,
    /// Entropy bonus: `entropy_coef * mean token entropy` is subtracted from the loss.
    pub entropy_coef: f64,
}

impl Default for TrainStepConfig {
    fn default() -> Self {
        Self {
            loss: LossKind::PpoClip,
            clip_low: 0.2,
            clip_high: 0.2,
            dual_clip: 3.0,
            max_grad_norm: 1.0,
            optimizer: AdamWConfig::default(),
            schedule: LrSchedule::default(),
            entropy_coef: 0.0,
        }
    }
}

impl TrainStepConfig {
    /// Checks the ranges, naming the offending key.
    pub fn validate(&self) -> Result<(), TrainStepError> {
        let bad = |m: String| Err(TrainStepError::Config(m));
        if !(0.0..1.0).contains(&self.clip_low) {
            return bad(format!("clip_low = {}: must be in [0, 1)", self.clip_low));
        }
        if !(self.clip_high >= 0.0 && self.clip_high.is_finite()) {
            return bad(format!("clip_high = {}: must be >= 0", self.clip_high));
        }
        if self.dual_clip != 0.0 && !(self.dual_clip > 1.0 && self.dual_clip.is_finite()) {
            return bad(format!(
                "dual_clip = {}: must be > 1, or 0 for off",
                self.dual_clip
            ));
        }
        if !(self.max_grad_norm >= 0.0 && self.max_grad_norm.is_finite()) {
            return bad(format!(
                "max_grad_norm = {}: must be >= 0",
                self.max_grad_norm
            ));
        }
        if !self.entropy_coef.is_finite() {
            return bad(format!(
                "entropy_coef = {}: must be finite",
                self.entropy_coef
            ));
        }
        self.optimizer.validate().map_err(TrainStepError::Config)?;
        self.schedule.validate().map_err(TrainStepError::Config)?;
        Ok(())
    }
}

/// One sequence of a batch, per token. Index j of every vector refers to token `ids[j]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrainSequence {
    /// Prompt and completion token ids.
    pub ids: Vec<u32>,
    /// True for tokens that are trained (completion tokens); `trained[0]` must be false (the
    /// first token has no prediction).
    pub trained: Vec<bool>,
    /// Per-token advantage (or loss coefficient for [`LossKind::Coefficients`]).
    pub advantages: Vec<f32>,
    /// Per-token log-prob under the policy that sampled it (unused by `coefficients`).
    pub old_logprobs: Vec<f32>,
}

/// A right-padded batch in tensor form.
#[derive(Debug, Clone)]
pub struct TrainBatch {
    /// `[B, T]` u32 token ids.
    pub input_ids: Tensor,
    /// `[B, T]` f32, 1 for real tokens.
    pub attention_mask: Tensor,
    /// First column whose token is a target (the earliest trained token of the batch): the
    /// output head is never evaluated on the shared prompt part before it.
    pub targets_from: usize,
    /// `[B, T - targets_from]` f32, 1 where the token is trained.
    pub loss_mask: Tensor,
    /// `[B, T - targets_from]` f32.
    pub advantages: Tensor,
    /// `[B, T - targets_from]` f32.
    pub old_logprobs: Tensor,
    /// Number of trained tokens.
    pub n_tokens: usize,
}

impl TrainBatch {
    /// Pads `seqs` on the right with `pad_id` and builds the tensors on `device`.
    pub fn from_sequences(
        seqs: &[TrainSequence],
        pad_id: u32,
        device: &Device,
    ) -> Result<Self, TrainStepError> {
        let bad = |m: String| Err(TrainStepError::Batch(m));
        if seqs.is_empty() {
            return bad("no sequences".into());
        }
        for (i, s) in seqs.iter().enumerate() {
            let n = s.ids.len();
            if s.trained.len() != n || s.advantages.len() != n || s.old_logprobs.len() != n {
                return bad(format!(
                    "sequence {i}: ids, trained, advantages and old_logprobs must have the same \
                     length (got {}, {}, {}, {})",
                    n,
                    s.trained.len(),
                    s.advantages.len(),
                    s.old_logprobs.len()
                ));
            }
            if s.trained.first() == Some(&true) {
                return bad(format!("sequence {i}: the first token cannot be trained"));
            }
        }
        let t = seqs.iter().map(|s| s.ids.len()).max().unwrap_or(0);
        let first_trained = seqs
            .iter()
            .filter_map(|s| s.trained.iter().position(|&x| x))
            .min();
        let Some(targets_from) = first_trained else {
            return bad("no trained token in the batch".into());
        };
        let (b, n) = (seqs.len(), t - targets_from);
        let mut ids = vec![pad_id; b * t];
        let mut att = vec![0f32; b * t];
        let (mut lm, mut adv, mut old) = (vec![0f32; b * n], vec![0f32; b * n], vec![0f32; b * n]);
        let mut n_tokens = 0;
        for (r, s) in seqs.iter().enumerate() {
            for (j, &id) in s.ids.iter().enumerate() {
                ids[r * t + j] = id;
                att[r * t + j] = 1.0;
                if j >= targets_from && s.trained[j] {
                    let k = r * n + j - targets_from;
                    lm[k] = 1.0;
                    adv[k] = s.advantages[j];
                    old[k] = s.old_logprobs[j];
                    n_tokens += 1;
                }
            }
        }
        Ok(Self {
            input_ids: Tensor::from_vec(ids, (b, t), device)?,
            attention_mask: Tensor::from_vec(att, (b, t), device)?,
            targets_from,
            loss_mask: Tensor::from_vec(lm, (b, n), device)?,
            advantages: Tensor::from_vec(adv, (b, n), device)?,
            old_logprobs: Tensor::from_vec(old, (b, n), device)?,
            n_tokens,
        })
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepStats {
    /// Loss value (token mean).
    pub loss: f64,
    /// Global gradient norm before clipping (NaN when the step was skipped before backward).
    pub grad_norm: f64,
    /// True when the update was skipped because the loss or gradient norm was NaN/Inf.
    pub skipped_nan: bool,
    /// Trained tokens in the step.
    pub n_tokens: usize,
    /// Fraction of trained tokens whose ratio was clipped (PPO loss only).
    pub clip_fraction: f64,
    /// Learning rate of the update.
    pub lr: f64,
    /// Mean entropy (nats) of the policy over the trained tokens (NaN when the model gives
    /// none).
    pub entropy: f64,
}

/// Owns a model and its optimiser and runs training steps on it.
pub struct TrainStep<M: TrainableModel> {
    model: M,
    optimizer: AdamW,
    config: TrainStepConfig,
    vars: Vec<(String, Var)>,
    accumulated: Option<GradStore>,
    pending: StepStats,
    /// Summed entropy of the trained tokens accumulated so far (None: the model gives none).
    entropy_sum: Option<f64>,
}

impl<M: TrainableModel> TrainStep<M> {
    /// Wraps `model`; the optimiser covers `model.trainable_vars()` as they are now (attach LoRA
    /// before this).
    pub fn new(model: M, config: TrainStepConfig) -> Result<Self, TrainStepError> {
        config.validate()?;
        let vars = model.trainable_vars();
        let optimizer = AdamW::new(vars.clone(), config.optimizer.clone())?;
        Ok(Self {
            model,
            optimizer,
            config,
            vars,
            accumulated: None,
            pending: StepStats::default(),
            entropy_sum: None,
        })
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The optimiser (for checkpoints).
    pub fn optimizer(&self) -> &AdamW {
        &self.optimizer
    }

    /// Mutable optimiser (to restore a checkpoint).
    pub fn optimizer_mut(&mut self) -> &mut AdamW {
        &mut self.optimizer
    }

    /// The configuration.
    pub fn config(&self) -> &TrainStepConfig {
        &self.config
    }

    /// Gives the model back.
    pub fn into_model(self) -> M {
        self.model
    }

    /// Forward and loss only (no gradient use): the loss value and clip fraction.
    pub fn loss(
        &self,
        batch: &TrainBatch,
        normalizer: usize,
    ) -> Result<(Tensor, f64), TrainStepError> {
        let (loss, clipped, _) = self.loss_with_entropy(batch, normalizer)?;
        Ok((loss, clipped))
    }

    /// The loss (minus the entropy bonus when `entropy_coef` is set), the clipped-token count,
    /// and the summed entropy of the trained tokens when the model gives it.
    fn loss_with_entropy(
        &self,
        batch: &TrainBatch,
        normalizer: usize,
    ) -> Result<(Tensor, f64, Option<f64>), TrainStepError> {
        // The loss reads only the trained positions: the head runs only there.
        let (logp, ent) = self.model.token_logprobs_and_entropy_at(
            &batch.input_ids,
            &batch.attention_mask,
            batch.targets_from,
            &batch.loss_mask,
        )?;
        let expected = batch.loss_mask.dims();
        if logp.dims() != expected || ent.as_ref().is_some_and(|e| e.dims() != expected) {
            return Err(TrainStepError::Model(format!(
                "token_logprobs returned shape {:?}, expected {:?}",
                logp.dims(),
                expected
            )));
        }
        let logp = logp.to_dtype(DType::F32)?;
        let (mut loss, clipped) = policy_loss(&self.config, batch, &logp, normalizer)?;
        let mut ent_sum = None;
        if let Some(ent) = ent {
            let summed = (ent.to_dtype(DType::F32)? * batch.loss_mask.detach())?.sum_all()?;
            ent_sum = Some(summed.to_dtype(DType::F64)?.to_scalar::<f64>()?);
            if self.config.entropy_coef != 0.0 {
                let bonus = (summed * (self.config.entropy_coef / normalizer.max(1) as f64))?;
                loss = (loss - bonus)?;
            }
        }
        Ok((loss, clipped, ent_sum))
    }

    /// Sets the entropy bonus coefficient of later steps.
    pub fn set_entropy_coef(&mut self, coef: f64) -> Result<(), TrainStepError> {
        if !coef.is_finite() {
            return Err(TrainStepError::Config(format!(
                "entropy_coef = {coef}: must be finite"
            )));
        }
        self.config.entropy_coef = coef;
        Ok(())
    }

    /// One full step on one batch: accumulate its gradient (normalised by its own token count)
    /// and apply the update.
    pub fn step(&mut self, batch: &TrainBatch) -> Result<StepStats, TrainStepError> {
        self.accumulate(batch, batch.n_tokens)?;
        self.apply()
    }

    /// Adds the gradient of one micro-batch; `normalizer` is the trained-token count of the
    /// whole mini-batch, so that accumulated micro-batches equal one large batch.
    pub fn accumulate(
        &mut self,
        batch: &TrainBatch,
        normalizer: usize,
    ) -> Result<(), TrainStepError> {
        let (loss, clipped, ent) = self.loss_with_entropy(batch, normalizer)?;
        if let Some(e) = ent {
            *self.entropy_sum.get_or_insert(0.0) += e;
        }
        let value = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        self.pending.n_tokens += batch.n_tokens;
        self.pending.clip_fraction += clipped;
        if !value.is_finite() || self.pending.skipped_nan {
            if !self.pending.skipped_nan {
                tracing::warn!(loss = value, "non-finite loss: this update will be skipped");
            }
            self.pending.loss = f64::NAN;
            self.pending.skipped_nan = true;
            return Ok(());
        }
        self.pending.loss += value;
        let grads = loss.backward()?;
        self.accumulated = Some(match self.accumulated.take() {
            None => grads,
            Some(mut acc) => {
                for (_, var) in &self.vars {
                    if let Some(g) = grads.get(var.as_tensor()) {
                        let sum = match acc.get(var.as_tensor()) {
                            Some(a) => (a + g)?,
                            None => g.clone(),
                        };
                        acc.insert(var.as_tensor(), sum);
                    }
                }
                acc
            }
        });
        Ok(())
    }

    /// Clips the accumulated gradient and applies one AdamW update (or skips it on NaN/Inf).
    pub fn apply(&mut self) -> Result<StepStats, TrainStepError> {
        let mut stats = std::mem::take(&mut self.pending);
        stats.entropy = self
            .entropy_sum
            .take()
            .map_or(f64::NAN, |s| s / stats.n_tokens.max(1) as f64);
        if stats.n_tokens > 0 {
            stats.clip_fraction /= stats.n_tokens as f64;
        }
        let lr = self
            .config
            .schedule
            .lr(self.config.optimizer.lr, self.optimizer.step_count());
        stats.lr = lr;
        stats.grad_norm = f64::NAN;
        let grads = self.accumulated.take();
        if stats.skipped_nan {
            return Ok(stats);
        }
        let Some(grads) = grads else {
            return Err(TrainStepError::Batch(
                "apply() called with no accumulated gradient (call accumulate() first)".into(),
            ));
        };
        let norm = global_grad_norm(&self.vars, &grads)?;
        stats.grad_norm = norm.norm;
        if !norm.is_finite() {
            tracing::warn!(
                grad_norm = norm.norm,
                "non-finite gradient norm: update skipped"
            );
            stats.skipped_nan = true;
            return Ok(stats);
        }
        self.optimizer.set_lr(lr);
        self.optimizer
            .step(&grads, clip_scale(norm, self.config.max_grad_norm))?;
        Ok(stats)
    }
}

/// The loss tensor (scalar) and the number of clipped trained tokens.
fn policy_loss(
    cfg: &TrainStepConfig,
    batch: &TrainBatch,
    logp: &Tensor,
    normalizer: usize,
) -> Result<(Tensor, f64), TrainStepError> {
    // Detached so that inputs computed by the model itself (old log-probs) carry no gradient.
    let mask = &batch.loss_mask.detach();
    let adv = &batch.advantages.detach();
    let old = &batch.old_logprobs.detach();
    let denom = normalizer.max(1) as f64;
    match cfg.loss {
        LossKind::Coefficients => {
            let per_token = (adv * logp)?.neg()?;
            Ok((((per_token * mask)?.sum_all()? / denom)?, 0.0))
        }
        LossKind::PpoClip => {
            let log_ratio = (logp - old)?.clamp(-20f32, 20f32)?;
            let ratio = log_ratio.exp()?;
            let neg_adv = adv.neg()?;
            let l1 = (&neg_adv * &ratio)?;
            let clipped_ratio =
                ratio.clamp(1.0 - cfg.clip_low as f32, 1.0 + cfg.clip_high as f32)?;
            let l2 = (&neg_adv * &clipped_ratio)?;
            // where() instead of max(): candle splits the gradient 50/50 at ties of max().
            let take_l1 = l1.ge(&l2)?;
            let mut per_token = take_l1.where_cond(&l1, &l2)?;
            let mut clipped = take_l1.eq(0u8)?.to_dtype(DType::F32)?;
            if cfg.dual_clip > 0.0 {
                let l3 = (&neg_adv * cfg.dual_clip)?;
                let dual = (adv.lt(0f32)?.to_dtype(DType::F32)?
                    * per_token.gt(&l3)?.to_dtype(DType::F32)?)?;
                let dual_u8 = dual.to_dtype(DType::U8)?;
                per_token = dual_u8.where_cond(&l3, &per_token)?;
                clipped = clipped.maximum(&dual)?;
            }
            let n_clipped = (clipped * mask)?
                .sum_all()?
                .to_dtype(DType::F64)?
                .to_scalar::<f64>()?;
            Ok((((per_token * mask)?.sum_all()? / denom)?, n_clipped))
        }
    }
}

/// Trained-token count of several micro-batches (the normaliser of [`TrainStep::accumulate`]).
pub fn total_tokens(batches: &[TrainBatch]) -> usize {
    batches.iter().map(|b| b.n_tokens).sum()
}
