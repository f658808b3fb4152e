//! The native candle model (quester-model) as a [`super::TrainablePolicy`]: chat template ->
//! tokens -> batched generation with per-token behaviour log-probs; updates through
//! quester-model's training step with caller-computed coefficients (`coef = -dL/dlogp x n`,
//! because the step divides its surrogate by the mini-batch's token count).

use quester_model::micro_batch::MicroBatchLimits;
use quester_model::model::shared_prefix_len;
use quester_model::train_step::{
    LossKind, TrainBatch, TrainSequence, TrainStep, TrainStepConfig, TrainStepError, TrainableModel,
};
use quester_model::{
    ChatMessage as MChat, ChatTemplate, DecodeWeights, GenerationRequest, Model, Tokenizer,
};
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use super::{
    ChatMessage, GenRequest, Generation, LossValue, OnStep, Policy, StepOutput, TextCodec,
    TrainSeq, TrainablePolicy, UpdateStats,
};
use crate::config::{TrainConfig, TrainMode};
use crate::error::TrainError;

/// The model wrapped for quester-model's training step.
pub(crate) struct PolicyModel(pub Model);

impl TrainableModel for PolicyModel {
    fn token_logprobs(
        &self,
        ids: &candle_core::Tensor,
        mask: &candle_core::Tensor,
        targets_from: usize,
    ) -> Result<candle_core::Tensor, TrainStepError> {
        self.0
            .token_logprobs(ids, mask, targets_from)
            .map_err(|e| TrainStepError::Model(e.to_string()))
    }
    fn trainable_vars(&self) -> Vec<(String, candle_core::Var)> {
        self.0.trainable_vars()
    }
    fn token_logprobs_and_entropy(
        &self,
        ids: &candle_core::Tensor,
        mask: &candle_core::Tensor,
        targets_from: usize,
    ) -> Result<(candle_core::Tensor, Option<candle_core::Tensor>), TrainStepError> {
        TrainableModel::token_logprobs_and_entropy(&self.0, ids, mask, targets_from)
    }
    fn token_logprobs_and_entropy_at(
        &self,
        ids: &candle_core::Tensor,
        mask: &candle_core::Tensor,
        targets_from: usize,
        keep: &candle_core::Tensor,
    ) -> Result<(candle_core::Tensor, Option<candle_core::Tensor>), TrainStepError> {
        TrainableModel::token_logprobs_and_entropy_at(&self.0, ids, mask, targets_from, keep)
    }
}

/// See the module doc.
pub(crate) struct NativePolicy {
    pub(crate) step: TrainStep<PolicyModel>,
    pub(crate) tokenizer: Tokenizer,
    pub(crate) template: ChatTemplate,
    pub(crate) pad_id: u32,
    pub(crate) micro_batch: MicroBatchLimits,
    /// Prompt tokens prefilled per token step of continuous generation (`model.prefill_chunk_tokens`;
    /// usize::MAX for no limit).
    prefill_tokens: usize,
    /// Bytes of prompt prefixes kept during one continuous generation (`model.prefix_cache_mb`).
    prefix_cache_bytes: usize,
    /// The frozen reference of the KL penalty (only when `algorithm.loss.kl_coef > 0`): the base
    /// model under LoRA (its weights never change), a copy of the initial weights otherwise.
    reference: Option<Model>,
    /// The base matrices packed for generation, made at the first rollout and kept until the
    /// base weights change (every update of a full fine-tune, a checkpoint load); under LoRA
    /// the base is frozen and one snapshot serves the whole run.
    decode: Mutex<Option<Arc<DecodeWeights>>>,
}

fn err<E: std::fmt::Display>(e: E) -> TrainError {
    TrainError::Policy(e.to_string())
}

/// Prompt + response as a training sequence whose response tokens are the trained ones.
fn train_sequence(s: &TrainSeq<'_>) -> TrainSequence {
    let n = s.prompt_ids.len() + s.response_ids.len();
    TrainSequence {
        ids: s.prompt_ids.iter().chain(s.response_ids).copied().collect(),
        trained: (0..n).map(|i| i >= s.prompt_ids.len()).collect(),
        advantages: vec![0.0; n],
        old_logprobs: vec![0.0; n],
    }
}

/// Log-probs of every response of `keep` (built as `seqs`) under `model`, micro-batch by
/// micro-batch (`mb`), with no autograd graph.
fn detached_logprobs(
    model: &Model,
    seqs: &[TrainSequence],
    keep: &[&TrainSeq<'_>],
    pad_id: u32,
    mb: MicroBatchLimits,
) -> Result<Vec<Vec<f64>>, TrainError> {
    let mut out = vec![Vec::new(); keep.len()];
    let order = prefix_order(seqs);
    let sorted: Vec<&TrainSequence> = order.iter().map(|&i| &seqs[i]).collect();
    for range in micro_batches(&sorted, mb) {
        let chunk = &order[range];
        let chunk_seqs: Vec<TrainSequence> = chunk.iter().map(|&i| seqs[i].clone()).collect();
        let tb = TrainBatch::from_sequences(&chunk_seqs, pad_id, model.device()).map_err(err)?;
        let lp = model
            .token_logprobs_detached(&tb.input_ids, &tb.attention_mask, tb.targets_from)
            .map_err(err)?
            .to_vec2::<f32>()
            .map_err(err)?;
        for (b, &i) in chunk.iter().enumerate() {
            let s = keep[i];
            let start = s.prompt_ids.len() - tb.targets_from;
            out[i] = lp[b][start..start + s.response_ids.len()]
                .iter()
                .map(|&x| f64::from(x))
                .collect();
        }
    }
    Ok(out)
}

/// Detached log-probs of every response of `batch` under `model`: one entry per sequence, empty
/// for empty responses.
fn score_with(
    model: &Model,
    batch: &[TrainSeq<'_>],
    pad_id: u32,
    mb: MicroBatchLimits,
) -> Result<Vec<Vec<f64>>, TrainError> {
    let keep: Vec<&TrainSeq<'_>> = batch
        .iter()
        .filter(|s| !s.response_ids.is_empty())
        .collect();
    let seqs: Vec<TrainSequence> = keep.iter().map(|s| train_sequence(s)).collect();
    let mut scored = detached_logprobs(model, &seqs, &keep, pad_id, mb)?.into_iter();
    Ok(batch
        .iter()
        .map(|s| {
            if s.response_ids.is_empty() {
                Vec::new()
            } else {
                scored.next().unwrap_or_default()
            }
        })
        .collect())
}

/// Indices of `seqs` in token order: sequences that start alike sit side by side, so a
/// micro-batch of them shares its common prefix (a group's prompt runs once, see
/// `Model::token_logprobs`), and lengths within a micro-batch stay close.
fn prefix_order(seqs: &[TrainSequence]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..seqs.len()).collect();
    order.sort_by(|&a, &b| seqs[a].ids.cmp(&seqs[b].ids));
    order
}

/// The micro-batches of `seqs` (already in token order) under `limits`.
pub(crate) fn micro_batches(
    seqs: &[&TrainSequence],
    limits: MicroBatchLimits,
) -> Vec<Range<usize>> {
    let rows: Vec<&[u32]> = seqs.iter().map(|s| s.ids.as_slice()).collect();
    let first_trained: Vec<usize> = seqs
        .iter()
        .map(|s| s.trained.iter().position(|&t| t).unwrap_or(s.ids.len()))
        .collect();
    quester_model::micro_batch::plan(&rows, &first_trained, limits)
}

/// The config's base model on `model.device`, with the LoRA adapter of `[model.lora]` attached
/// (freshly initialised from `model.lora.seed`, which is `training.seed` unless given) when
/// `model.train = "lora"`: the model `build` trains and a checkpoint's weights fit (`quester
/// export` loads runs with it).
pub(crate) fn load_model(cfg: &TrainConfig) -> Result<quester_model::LoadedModel, TrainError> {
    let device = quester_model::parse_device(&cfg.model.device)
        .map_err(|e| TrainError::Config(format!("model.device: {e}")))?;
    let mut loaded = if cfg.model.path.is_empty() {
        quester_model::load_default().map_err(err)?
    } else {
        quester_model::load(Path::new(&cfg.model.path)).map_err(err)?
    };
    if !device.is_cpu() {
        loaded.model = loaded.model.to_device(&device).map_err(err)?;
    }
    let (precision, note) = cfg.model.precision.resolve(&device);
    if let Some(note) = note {
        tracing::warn!("{note}");
    }
    tracing::info!(
        "model precision {precision:?} ({})",
        quester_model::cpu_matrix_features()
    );
    loaded.model.set_precision(precision);
    if cfg.model.train == TrainMode::Lora {
        loaded
            .model
            .attach_lora(&cfg.model.lora)
            .map_err(|e| TrainError::Config(format!("model.lora: {e}")))?;
    }
    if !cfg.model.init.is_empty() {
        init_from(&loaded.model, Path::new(&cfg.model.init))?;
    }
    Ok(loaded)
}

/// Copies the trained weights of the checkpoint `source` names (see `crate::locate`) into the
/// model's trainable variables: the starting point `model.init` asks for. The checkpoint must
/// train the same variables (LoRA of the same rank and targets, or a full fine-tune).
fn init_from(model: &Model, source: &Path) -> Result<(), TrainError> {
    let bad = |why: String| TrainError::Config(format!("model.init = {}: {why}", source.display()));
    let (_, checkpoint) = crate::locate::locate(source).map_err(|e| bad(e.to_string()))?;
    let ck = quester_model::checkpoint::load_checkpoint(&checkpoint.join("policy.safetensors"))
        .map_err(|e| bad(e.to_string()))?;
    ck.restore_weights(&model.trainable_vars()).map_err(|e| {
        bad(format!(
            "{e} (model.train and [model.lora] must be those the checkpoint was trained with)"
        ))
    })?;
    tracing::info!(checkpoint = %checkpoint.display(), "model.init: weights loaded");
    Ok(())
}

/// Builds the native model policy of a config.
pub fn build(cfg: &TrainConfig) -> Result<Box<dyn super::TrainablePolicy>, TrainError> {
    let loaded = load_model(cfg)?;
    let schedule = cfg.optimizer_schedule();
    Ok(Box::new(NativePolicy::from_loaded(cfg, loaded, schedule)?))
}

impl NativePolicy {
    /// The policy of `cfg` around a model already loaded by [`load_model`], with the learning
    /// rate following `schedule` (supervised fine-tuning fills in its own step count).
    pub(crate) fn from_loaded(
        cfg: &TrainConfig,
        loaded: quester_model::LoadedModel,
        schedule: quester_model::optim::LrSchedule,
    ) -> Result<Self, TrainError> {
        let model = loaded.model;
        let reference = match (cfg.algorithm.loss.kl_coef > 0.0, cfg.model.train) {
            (false, _) => None,
            (true, TrainMode::Lora) => Some(model.without_lora()),
            (true, TrainMode::Full) => Some(model.deep_clone().map_err(err)?),
        };
        let tcfg = TrainStepConfig {
            loss: LossKind::Coefficients,
            max_grad_norm: cfg.training.grad_clip,
            optimizer: cfg.training.optimizer.clone(),
            schedule,
            ..TrainStepConfig::default()
        };
        let pad_id = loaded.tokenizer.eos_ids().first().copied().unwrap_or(0);
        let step = TrainStep::new(PolicyModel(model), tcfg).map_err(err)?;
        Ok(NativePolicy {
            step,
            tokenizer: loaded.tokenizer,
            template: loaded.chat_template,
            pad_id,
            micro_batch: if cfg.training.micro_batch_tokens > 0 {
                MicroBatchLimits::tokens(cfg.training.micro_batch_tokens)
            } else {
                MicroBatchLimits::rows(cfg.training.micro_batch.max(1))
            },
            prefill_tokens: match cfg.model.prefill_chunk_tokens {
                0 => usize::MAX,
                n => n,
            },
            prefix_cache_bytes: cfg.model.prefix_cache_mb.saturating_mul(1 << 20),
            reference,
            decode: Mutex::new(None),
        })
    }
}

impl NativePolicy {
    /// The packed snapshot of the current base weights, made on first use (None for models
    /// other than f32 and CPUs without the packed kernel: those generate from the model's own
    /// tensors).
    fn decode_weights(&self) -> Result<Option<Arc<DecodeWeights>>, TrainError> {
        let model = &self.step.model().0;
        if !DecodeWeights::pays_off(model) {
            return Ok(None);
        }
        let mut slot = self.decode.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            let t = std::time::Instant::now();
            *slot = Some(Arc::new(DecodeWeights::new(model).map_err(err)?));
            tracing::debug!(
                seconds = t.elapsed().as_secs_f64(),
                "packed decoding weights"
            );
        }
        Ok(slot.clone())
    }

    pub(crate) fn forget_decode_weights(&self) {
        *self.decode.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl NativePolicy {
    /// The chat-formatted, tokenised prompt with the forced response opening appended.
    fn prompt_ids(&self, messages: &[ChatMessage], prefix: &str) -> Result<Vec<u32>, TrainError> {
        render_prompt(&self.template, &self.tokenizer, messages, prefix)
    }
}

impl NativePolicy {
    /// `r` as the engine's request: its rendered, tokenised prompt and its sampling settings.
    fn engine_request(&self, r: &GenRequest) -> Result<GenerationRequest, TrainError> {
        let prompt_ids = match &r.prompt_ids {
            Some(ids) => {
                super::codec::check_prompt_ids(ids, self.tokenizer.vocab_size())?;
                ids.clone()
            }
            None => self.prompt_ids(&r.messages, &r.response_prefix)?,
        };
        Ok(GenerationRequest {
            prompt_ids,
            params: r.params.clone(),
        })
    }
}

/// The engine's output as the trainer's [`Generation`] of the prompt `prompt_ids`.
fn generation(prompt_ids: Vec<u32>, o: quester_model::GenerationOutput) -> Generation {
    Generation {
        text: o.text,
        prompt_ids,
        response_ids: o.token_ids,
        logprobs: o.logprobs,
        temperatures: o.temperatures,
    }
}

impl Policy for NativePolicy {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        let reqs = requests
            .iter()
            .map(|r| self.engine_request(r))
            .collect::<Result<Vec<_>, _>>()?;
        let longest = reqs.iter().map(|r| r.prompt_ids.len()).max().unwrap_or(0);
        let t = std::time::Instant::now();
        let model = &self.step.model().0;
        let outs = match self.decode_weights()? {
            Some(w) => quester_model::generate_with(model, &w, &self.tokenizer, &reqs),
            None => quester_model::generate(model, &self.tokenizer, &reqs),
        }
        .map_err(err)?;
        tracing::debug!(
            batch = reqs.len(),
            longest_prompt = longest,
            new_tokens = outs.iter().map(|o| o.token_ids.len()).sum::<usize>(),
            seconds = t.elapsed().as_secs_f64(),
            "generated"
        );
        Ok(reqs
            .into_iter()
            .zip(outs)
            .map(|(r, o)| generation(r.prompt_ids, o))
            .collect())
    }

    fn generate_continuous(
        &mut self,
        first: Vec<(u64, GenRequest)>,
        on_step: &mut OnStep<'_>,
    ) -> Result<(), TrainError> {
        let this = &*self;
        let weights = this.decode_weights()?;
        // Each live request's prompt ids, returned with its response.
        let mut prompts: HashMap<u64, Vec<u32>> = HashMap::new();
        let to_engine = |list: Vec<(u64, GenRequest)>,
                         prompts: &mut HashMap<u64, Vec<u32>>|
         -> Result<Vec<(u64, GenerationRequest)>, TrainError> {
            list.into_iter()
                .map(|(key, r)| {
                    let req = this.engine_request(&r)?;
                    prompts.insert(key, req.prompt_ids.clone());
                    Ok((key, req))
                })
                .collect()
        };
        let first = to_engine(first, &mut prompts)?;
        quester_model::generate_continuous_with_progress(
            &this.step.model().0,
            weights.as_deref(),
            &this.tokenizer,
            quester_model::SchedulerConfig {
                max_rows: usize::MAX,
                prefill_tokens: this.prefill_tokens,
                prefix_cache_bytes: this.prefix_cache_bytes,
            },
            first,
            &mut |report| {
                let finished = report
                    .finished
                    .into_iter()
                    .map(|(key, o)| (key, generation(prompts.remove(&key).unwrap_or_default(), o)))
                    .collect();
                let orders = on_step(StepOutput {
                    finished,
                    progress: report.progress,
                })?;
                for key in &orders.cancel {
                    prompts.remove(key);
                }
                Ok(quester_model::Orders {
                    submit: to_engine(orders.submit, &mut prompts)?,
                    cancel: orders.cancel,
                })
            },
        )
    }

    fn encode(
        &mut self,
        messages: &[ChatMessage],
        response_prefix: &str,
    ) -> Result<Vec<u32>, TrainError> {
        self.prompt_ids(messages, response_prefix)
    }

    /// The base model (its weights shared, not copied) with the adapter attached, in a fresh
    /// training step: the optimiser state starts over, as a served model has none to keep.
    fn set_adapter(&mut self, dir: Option<&Path>) -> Result<(), TrainError> {
        let mut model = self.step.model().0.without_lora();
        if let Some(dir) = dir {
            quester_model::export::load_peft(dir, &mut model)
                .map_err(|e| TrainError::Policy(format!("adapter {}: {e}", dir.display())))?;
        }
        self.step = TrainStep::new(PolicyModel(model), self.step.config().clone()).map_err(err)?;
        self.forget_decode_weights();
        Ok(())
    }

    fn text_codec(&self) -> Option<Arc<dyn TextCodec>> {
        Some(Arc::new(NativeCodec {
            template: self.template.clone(),
            tokenizer: self.tokenizer.clone(),
        }))
    }
}

/// The native policy's template and tokenizer, copied out of it (see [`TextCodec`]).
struct NativeCodec {
    template: ChatTemplate,
    tokenizer: Tokenizer,
}

impl TextCodec for NativeCodec {
    fn encode(
        &self,
        messages: &[ChatMessage],
        response_prefix: &str,
    ) -> Result<Vec<u32>, TrainError> {
        render_prompt(&self.template, &self.tokenizer, messages, response_prefix)
    }

    fn decode(&self, ids: &[u32]) -> Result<String, TrainError> {
        self.tokenizer.decode(ids).map_err(err)
    }

    fn encode_text(&self, text: &str) -> Result<Vec<u32>, TrainError> {
        self.tokenizer.encode(text).map_err(err)
    }

    fn vocab_size(&self) -> usize {
        self.tokenizer.vocab_size()
    }

    fn eos_ids(&self) -> Vec<u32> {
        self.tokenizer.eos_ids().to_vec()
    }
}

/// The chat-formatted, tokenised prompt with the forced response opening appended.
fn render_prompt(
    template: &ChatTemplate,
    tokenizer: &Tokenizer,
    messages: &[ChatMessage],
    prefix: &str,
) -> Result<Vec<u32>, TrainError> {
    let msgs: Vec<MChat> = messages
        .iter()
        .map(|m| MChat::new(m.role.clone(), m.content.clone()))
        .collect();
    let mut text = template.render(&msgs, true).map_err(err)?;
    text.push_str(prefix);
    tokenizer.encode(&text).map_err(err)
}

impl TrainablePolicy for NativePolicy {
    fn update(
        &mut self,
        batch: &[TrainSeq<'_>],
        loss_fn: &mut dyn FnMut(&[Vec<f64>]) -> LossValue,
        entropy_coef: f64,
    ) -> Result<UpdateStats, TrainError> {
        self.step.set_entropy_coef(entropy_coef).map_err(err)?;
        let keep: Vec<&TrainSeq<'_>> = batch
            .iter()
            .filter(|s| !s.response_ids.is_empty())
            .collect();
        let mut seqs: Vec<TrainSequence> = keep.iter().map(|s| train_sequence(s)).collect();
        if seqs.is_empty() {
            return Ok(UpdateStats::default());
        }
        // Current log-probs: given with the batch when nothing changed since sampling, else
        // computed micro-batch by micro-batch (one pass over the whole mini-batch would keep
        // every sequence's activations alive at once).
        let mb = self.micro_batch;
        let n_tokens: usize = keep.iter().map(|s| s.response_ids.len()).sum();
        let given: Option<Vec<&[f32]>> = keep.iter().map(|s| s.current_logprobs).collect();
        let new: Vec<Vec<f64>> = match given {
            Some(lps)
                if lps
                    .iter()
                    .zip(&keep)
                    .all(|(l, s)| l.len() == s.response_ids.len()) =>
            {
                lps.iter()
                    .map(|l| l.iter().map(|&x| f64::from(x)).collect())
                    .collect()
            }
            _ => detached_logprobs(&self.step.model().0, &seqs, &keep, self.pad_id, mb)?,
        };
        // Sequences with no response keep their (empty) slot for the caller's alignment.
        let mut full = Vec::with_capacity(batch.len());
        let mut it = new.iter();
        for s in batch {
            full.push(if s.response_ids.is_empty() {
                Vec::new()
            } else {
                it.next().cloned().unwrap_or_default()
            });
        }
        let lv = loss_fn(&full);
        let total_tokens = n_tokens;
        let n_tokens = n_tokens as f64;
        let mut k = 0;
        for (s, d) in batch.iter().zip(&lv.dlogp) {
            if s.response_ids.is_empty() {
                continue;
            }
            let seq = &mut seqs[k];
            let p = s.prompt_ids.len();
            for (j, g) in d.iter().enumerate() {
                seq.advantages[p + j] = (-g * n_tokens) as f32;
            }
            k += 1;
        }
        if !lv.loss.is_finite() {
            tracing::warn!(loss = lv.loss, "non-finite loss: update skipped");
            return Ok(UpdateStats {
                loss: lv.loss,
                grad_norm: f64::NAN,
                entropy: f64::NAN,
                skipped_nonfinite: true,
            });
        }
        // Gradients of every micro-batch, normalised by the mini-batch's token count, summed;
        // then one clipped optimiser step. Without an entropy bonus, a sequence whose
        // coefficients are all zero contributes exactly nothing: it is not run at all.
        if entropy_coef == 0.0 {
            seqs.retain(|s| s.advantages.iter().any(|&c| c != 0.0));
        }
        if seqs.is_empty() {
            // No gradient at all (every advantage zero): no optimiser step either.
            return Ok(UpdateStats {
                loss: lv.loss,
                grad_norm: 0.0,
                entropy: f64::NAN,
                skipped_nonfinite: false,
            });
        }
        // Sequences that start alike side by side (they share their prefix's computation); the
        // order of a sum of gradients does not matter.
        seqs.sort_by(|a, b| a.ids.cmp(&b.ids));
        let mut shared = 0;
        let sorted: Vec<&TrainSequence> = seqs.iter().collect();
        let plan = micro_batches(&sorted, mb);
        let micro_batches = plan.len();
        for range in plan {
            let chunk = &seqs[range];
            let tb = TrainBatch::from_sequences(chunk, self.pad_id, self.step.model().0.device())
                .map_err(err)?;
            let ids: Vec<&[u32]> = chunk.iter().map(|s| s.ids.as_slice()).collect();
            shared += (chunk.len() - 1) * shared_prefix_len(&ids, tb.targets_from);
            self.step.accumulate(&tb, total_tokens).map_err(err)?;
        }
        let st = self.step.apply().map_err(err)?;
        if !self.step.model().0.lora_attached {
            self.forget_decode_weights();
        }
        tracing::debug!(
            sequences = seqs.len(),
            micro_batches,
            tokens = seqs.iter().map(|s| s.ids.len()).sum::<usize>(),
            shared_prefix_tokens = shared,
            longest = seqs.iter().map(|s| s.ids.len()).max().unwrap_or(0),
            "updated"
        );
        Ok(UpdateStats {
            loss: lv.loss,
            grad_norm: st.grad_norm,
            entropy: st.entropy,
            skipped_nonfinite: st.skipped_nan,
        })
    }

    fn score(&mut self, batch: &[TrainSeq<'_>]) -> Result<Vec<Vec<f64>>, TrainError> {
        score_with(&self.step.model().0, batch, self.pad_id, self.micro_batch)
    }

    fn reference_logprobs(
        &mut self,
        batch: &[TrainSeq<'_>],
    ) -> Result<Option<Vec<Vec<f64>>>, TrainError> {
        match &self.reference {
            None => Ok(None),
            Some(reference) => {
                score_with(reference, batch, self.pad_id, self.micro_batch).map(Some)
            }
        }
    }

    fn save(&self, dir: &Path) -> Result<(), TrainError> {
        let vars = self.step.model().trainable_vars();
        let weights: Vec<(String, candle_core::Tensor)> = vars
            .iter()
            .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
            .collect();
        let meta = quester_model::checkpoint::CheckpointMeta {
            all_weights: false,
            ..Default::default()
        };
        quester_model::checkpoint::save_checkpoint(
            &dir.join("policy.safetensors"),
            &weights,
            Some(self.step.optimizer()),
            &meta,
        )
        .map_err(err)
    }

    fn load(&mut self, dir: &Path) -> Result<(), TrainError> {
        let ck = quester_model::checkpoint::load_checkpoint(&dir.join("policy.safetensors"))
            .map_err(err)?;
        ck.restore_weights(&self.step.model().trainable_vars())
            .map_err(err)?;
        self.forget_decode_weights();
        ck.restore_optimizer(self.step.optimizer_mut()).map_err(err)
    }

    fn export_adapter(&self, dir: &Path) -> Result<(), TrainError> {
        quester_model::export::export_peft(dir, &self.step.model().0, "quester-base")
            .map_err(|e| TrainError::Policy(format!("adapter {}: {e}", dir.display())))
    }
}
