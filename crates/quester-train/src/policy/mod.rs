//! The policy interface the rollout engine and the training loop drive.
//!
//! A [`Policy`] turns a batch of chat conversations into responses in ONE call (so a backend can
//! batch them), reporting for every response token the behaviour log-probability (of the
//! distribution actually sampled from) and the temperature used. A [`TrainablePolicy`] can also
//! take a gradient step on a loss whose per-token gradient the caller supplies.

pub mod codec;
pub mod native;
pub mod remote;
pub mod tabular;

use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::error::TrainError;

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: "system".into(),
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: "user".into(),
            content: content.into(),
        }
    }
    pub(crate) fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: "assistant".into(),
            content: content.into(),
        }
    }
}

/// Sampling settings of one request: quester-model's own type (temperature, top-p, top-k,
/// token limit, stop strings, an optional temperature switch inside the response, and the seed
/// of the request's own sampling stream, so a response does not depend on what else is in the
/// batch). Every request carries its own, so a method can mix temperatures inside a group.
pub use quester_model::{SamplingParams, Scaffold, TemperatureSwitch};

/// Tokens a running request added in one step, with their log-probs.
pub use quester_model::Progress;

pub use codec::{check_prompt_ids, TextCodec};

/// One generation request: a conversation, a forced response opening and how to sample.
#[derive(Debug, Clone, PartialEq)]
pub struct GenRequest {
    pub messages: Vec<ChatMessage>,
    /// The assistant's reply is forced to start with this text (empty: no constraint). Policies
    /// that can (the native model) append it to the rendered prompt and return only what
    /// follows; the others ignore it. The caller puts prefix and response back together.
    pub response_prefix: String,
    /// The prompt as token ids, rendered by the caller (a client that sends token ids, as a
    /// rollout worker's trainer does): when set, it is the prompt as is, and `messages` and
    /// `response_prefix` are not rendered. Only policies with a tokenizer accept it.
    pub prompt_ids: Option<Vec<u32>>,
    pub params: SamplingParams,
}

/// One generated response.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Generation {
    pub text: String,
    /// The rendered, tokenised prompt.
    pub prompt_ids: Vec<u32>,
    pub response_ids: Vec<u32>,
    /// Behaviour log-probability of every response token.
    pub logprobs: Vec<f32>,
    /// Sampling temperature of every response token.
    pub temperatures: Vec<f32>,
}

/// What the caller of [`Policy::generate_continuous`] asks for after a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Orders {
    /// New requests, each under a key of the caller's choosing (unique among live ones).
    pub submit: Vec<(u64, GenRequest)>,
    /// Live requests to drop; they are never reported.
    pub cancel: Vec<u64>,
}

/// What came back from one step of [`Policy::generate_continuous`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepOutput {
    /// The requests that ended (possibly none), with their keys and responses.
    pub finished: Vec<(u64, Generation)>,
    /// The tokens requests still running added since the last step (reported by policies
    /// that schedule per token step; empty from the others, whose requests only finish).
    pub progress: Vec<(u64, Progress)>,
}

/// Receives each step's output and answers with what to do next.
pub type OnStep<'a> = dyn FnMut(StepOutput) -> Result<Orders, TrainError> + 'a;

/// A model that answers conversations.
pub trait Policy {
    /// Generates one response per request (each with its own sampling settings), in request
    /// order.
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError>;

    /// Generation driven by the caller: `first` is submitted, and every time responses come
    /// back `on_step` gets them and answers with requests to add and requests to drop;
    /// returns once nothing is left. A policy that schedules per token step (the native
    /// model) calls `on_step` after every step, so a request that ends early frees its row
    /// and its caller goes on while the others decode. This default runs what is pending as
    /// one [`Policy::generate`] batch at a time (each batch waits for its longest response).
    fn generate_continuous(
        &mut self,
        first: Vec<(u64, GenRequest)>,
        on_step: &mut OnStep<'_>,
    ) -> Result<(), TrainError> {
        let mut pending = first;
        while !pending.is_empty() {
            let (keys, requests): (Vec<u64>, Vec<GenRequest>) = pending.into_iter().unzip();
            let gens = self.generate(&requests)?;
            if gens.len() != requests.len() {
                return Err(TrainError::Policy(format!(
                    "asked for {} responses, got {}",
                    requests.len(),
                    gens.len()
                )));
            }
            // Nothing is live between batches, so there is nothing to cancel.
            let finished = keys.into_iter().zip(gens).collect();
            pending = on_step(StepOutput {
                finished,
                progress: Vec::new(),
            })?
            .submit;
        }
        Ok(())
    }

    /// Replaces the policy's LoRA adapter with the PEFT adapter in `dir` (None: no adapter,
    /// the base model), for serving: a trainer's rollout workers take each update this way.
    /// Policies that cannot refuse.
    fn set_adapter(&mut self, _dir: Option<&Path>) -> Result<(), TrainError> {
        Err(TrainError::Policy(
            "this policy cannot load LoRA adapters".into(),
        ))
    }

    /// Whether the log-probs of its generations are the trainable policy's own, computed by
    /// the engine it trains (so, sampled untempered and untruncated, they can stand for a
    /// scoring pass); false when another engine sampled.
    fn logprobs_are_trainers(&self) -> bool {
        true
    }

    /// Seconds spent loading new weights into another engine since the last call (0 for a
    /// policy that samples with the weights it trains).
    fn take_weight_sync_seconds(&mut self) -> f64 {
        0.0
    }

    /// The policy's chat template and tokenizer, usable from other threads while it generates
    /// (None for a policy without a tokenizer).
    fn text_codec(&self) -> Option<std::sync::Arc<dyn TextCodec>> {
        None
    }

    /// The prompt token ids `generate` would condition on for this conversation and forced
    /// opening: how a method that trains a response under another context than it was sampled
    /// in (EMPO2's tips removed, HeRL's hindsight prompt) gets that context's ids.
    fn encode(
        &mut self,
        _messages: &[ChatMessage],
        _response_prefix: &str,
    ) -> Result<Vec<u32>, TrainError> {
        Err(TrainError::Policy(
            "this policy cannot encode prompts (it has no tokenizer)".into(),
        ))
    }
}

/// One trained sequence: the prompt and the response tokens whose log-probs are trained.
#[derive(Debug, Clone, Copy)]
pub struct TrainSeq<'a> {
    pub prompt_ids: &'a [u32],
    pub response_ids: &'a [u32],
    /// The response's log-probs when they are known to be the current policy's (sampled
    /// untempered from these very weights, nothing updated since): a policy may use them
    /// instead of a scoring pass.
    pub current_logprobs: Option<&'a [f32]>,
}

/// The loss of a mini-batch as the caller computes it from the CURRENT per-token log-probs:
/// its value and dL/dlogp for every response token. The policy back-propagates the surrogate
/// `sum_i coef_i * logp_i`, whose gradient equals the loss's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LossValue {
    pub loss: f64,
    pub dlogp: Vec<Vec<f64>>,
}

/// What one update did.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UpdateStats {
    pub loss: f64,
    /// Global gradient L2 norm before clipping.
    pub grad_norm: f64,
    /// Mean per-token entropy of the policy on the batch.
    pub entropy: f64,
    /// The update was skipped because the loss or gradient was NaN/Inf.
    pub skipped_nonfinite: bool,
}

/// A policy that can be trained and checkpointed.
pub trait TrainablePolicy: Policy {
    /// One optimiser step. `loss_fn` receives the current log-probs of every response token
    /// (one Vec per sequence) and returns the loss and dL/dlogp. An entropy bonus
    /// `entropy_coef * mean token entropy` is added model-side. A non-finite loss or gradient
    /// must leave the weights untouched and set `skipped_nonfinite`.
    fn update(
        &mut self,
        batch: &[TrainSeq<'_>],
        loss_fn: &mut dyn FnMut(&[Vec<f64>]) -> LossValue,
        entropy_coef: f64,
    ) -> Result<UpdateStats, TrainError>;

    /// Log-probs of the responses under the CURRENT weights, untempered, with no gradient: the
    /// rescoring of behaviour log-probs that are not the current policy's (see
    /// `crate::behaviour`).
    fn score(&mut self, batch: &[TrainSeq<'_>]) -> Result<Vec<Vec<f64>>, TrainError>;

    /// Log-probs of the responses under the frozen reference model (for the KL penalty), or
    /// None when the policy has no reference.
    fn reference_logprobs(
        &mut self,
        _batch: &[TrainSeq<'_>],
    ) -> Result<Option<Vec<Vec<f64>>>, TrainError> {
        Ok(None)
    }

    /// Writes the weights and optimiser state into `dir` (which exists and is empty).
    fn save(&self, dir: &Path) -> Result<(), TrainError>;

    /// Loads what [`TrainablePolicy::save`] wrote.
    fn load(&mut self, dir: &Path) -> Result<(), TrainError>;

    /// Writes the trained LoRA adapter as a PEFT directory `dir` (how rollout servers take
    /// each update). Policies without one refuse.
    fn export_adapter(&self, _dir: &Path) -> Result<(), TrainError> {
        Err(TrainError::Policy(
            "this policy has no LoRA adapter to export".into(),
        ))
    }

    /// Hands over the sampler of a policy whose rollouts are sampled elsewhere, with the folder
    /// its adapters are written to, so that rollouts are sampled ahead of the updates on
    /// another thread (`rollout.max_staleness > 0`); until it is given back the policy
    /// generates with its own engine. None: the policy samples its rollouts itself.
    fn take_rollout_sampler(
        &mut self,
    ) -> Option<(Box<dyn remote::RolloutSampler>, std::path::PathBuf)> {
        None
    }

    /// Gives back what [`TrainablePolicy::take_rollout_sampler`] handed over.
    fn restore_rollout_sampler(&mut self, _sampler: Box<dyn remote::RolloutSampler>) {}
}
