//! The Llama-family decoder (Llama / SmolLM2, Qwen2, Qwen3) with trainable f32 weights.

mod decode_weights;
mod forward;
mod kv_cache;
mod layout;
mod shared_prefix;
mod weights;

pub use decode_weights::DecodeWeights;
pub(crate) use decode_weights::PackedLayer;
pub use kv_cache::KvCache;
pub(crate) use shared_prefix::worth_sharing;
pub use shared_prefix::{common_prefix_len, shared_prefix_len};

use crate::config::ModelConfig;
use crate::nn::Linear;
use crate::precision::Precision;
use candle_core::{DType, Device, Var};

/// One decoder layer.
#[derive(Debug, Clone)]
pub struct Layer {
    /// RMSNorm before attention.
    pub input_layernorm: Var,
    /// Query projection.
    pub q_proj: Linear,
    /// Key projection.
    pub k_proj: Linear,
    /// Value projection.
    pub v_proj: Linear,
    /// Attention output projection.
    pub o_proj: Linear,
    /// Per-head RMSNorm weight on queries (Qwen3).
    pub q_norm: Option<Var>,
    /// Per-head RMSNorm weight on keys (Qwen3).
    pub k_norm: Option<Var>,
    /// RMSNorm before the MLP.
    pub post_attention_layernorm: Var,
    /// SwiGLU gate.
    pub gate_proj: Linear,
    /// SwiGLU up.
    pub up_proj: Linear,
    /// SwiGLU down.
    pub down_proj: Linear,
}

/// A decoder-only language model. Weights are candle `Var`s so the same object generates,
/// scores and trains. `clone()` shares the weights; `deep_clone()` copies them.
#[derive(Debug, Clone)]
pub struct Model {
    /// Architecture.
    pub config: ModelConfig,
    /// Token embedding [vocab, hidden] (also the output head when tied).
    pub embed_tokens: Var,
    /// Decoder layers.
    pub layers: Vec<Layer>,
    /// Final RMSNorm.
    pub norm: Var,
    /// Untied output head [vocab, hidden]; None when tied to the embedding.
    pub lm_head: Option<Var>,
    /// True once a LoRA adapter is attached: only adapters are trainable then.
    pub lora_attached: bool,
    /// How the projections and the output head multiply ([`Model::set_precision`]).
    pub precision: Precision,
    /// Under LoRA in bf16, the output head packed at its first product and reused: frozen while
    /// the adapters train, it was packed twice per 256-row chunk of every scoring and training
    /// pass (forward and input gradient). Checked against the head tensor's identity; after
    /// changing the head in place call [`Model::forget_packed_weights`].
    pub(crate) packed_head: crate::nn::linear::PackedBase,
}

impl Model {
    /// Element type of the weights.
    pub fn dtype(&self) -> DType {
        self.embed_tokens.dtype()
    }

    /// Where the weights live (the CPU unless moved with [`Model::to_device`]).
    pub fn device(&self) -> &Device {
        self.embed_tokens.device()
    }

    /// Makes every projection and the output head multiply in `precision`, in generation,
    /// scoring and training alike (so behaviour and training log-probs come from the same
    /// products). Weights stay f32. A [`DecodeWeights`] snapshot packed in the other precision
    /// is refused from then on: pack it again.
    /// Drops every packed copy of a frozen weight (the LoRA bases, the head): needed only after
    /// changing weights in place (`Var::set`) while adapters train.
    pub fn forget_packed_weights(&self) {
        self.packed_head.forget();
        for l in &self.layers {
            for (_, p) in l.projections() {
                p.forget_packed_base();
            }
        }
    }

    pub fn set_precision(&mut self, precision: Precision) {
        self.precision = precision;
        for l in &mut self.layers {
            for (_, p) in l.projections_mut() {
                p.precision = precision;
            }
        }
    }
}
