//! The one projection type of the model: a frozen-or-trainable weight, an optional bias and an
//! optional LoRA adapter.

use crate::ops::{FrozenBf16, PackedMatrix};
use crate::precision::Precision;
use candle_core::{DType, Result, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Which projections get LoRA adapters, and their size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoraConfig {
    /// Rank r of the update `B A`.
    pub rank: usize,
    /// The update is scaled by `alpha / rank`.
    pub alpha: f64,
    /// Projection names: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj.
    pub target_modules: Vec<String>,
    /// Seed of the A initialisation.
    pub seed: u64,
}

impl Default for LoraConfig {
    fn default() -> Self {
        LoraConfig {
            rank: 16,
            alpha: 32.0,
            target_modules: LORA_TARGETS.iter().map(ToString::to_string).collect(),
            seed: 0,
        }
    }
}

/// The projection names a LoRA adapter can be attached to.
pub const LORA_TARGETS: [&str; 7] = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
];

/// A low-rank update: `y += scale * (x A^T) B^T`, A [r, in], B [out, r] (zero at init, so the
/// adapted model starts equal to the base model).
#[derive(Debug, Clone)]
pub struct LoraAdapter {
    /// Down projection [r, in].
    pub a: Var,
    /// Up projection [out, r].
    pub b: Var,
    /// alpha / r.
    pub scale: f64,
}

/// `y = x W^T (+ bias) (+ LoRA)`. W is [out, in] like PyTorch.
#[derive(Debug, Clone)]
pub struct Linear {
    /// The weight [out, in].
    pub weight: Var,
    /// Optional bias [out].
    pub bias: Option<Var>,
    /// Optional LoRA adapter.
    pub lora: Option<LoraAdapter>,
    /// How the products with `weight` compute (set for the whole model by
    /// [`crate::Model::set_precision`]).
    pub precision: Precision,
    /// Under LoRA in bf16, `weight` packed at the first training product and reused: the base
    /// is frozen while the adapter trains. Checked against the weight tensor's identity, so a
    /// replaced `weight` is packed again; after changing it in place (`Var::set`) call
    /// [`Linear::forget_packed_base`].
    packed_base: PackedBase,
}

/// A lazily packed frozen weight (a LoRA base, the output head under LoRA), shared by clones
/// of its owner (they share the weight).
#[derive(Clone, Default)]
pub(crate) struct PackedBase(Arc<Mutex<Option<Arc<FrozenBf16>>>>);

impl PackedBase {
    /// The panels of `w` (the weight `Var`'s own tensor, whose identity is checked), packed now
    /// when there are none or they were packed from another tensor.
    pub(crate) fn get_or_pack(&self, w: &Tensor) -> Result<Arc<FrozenBf16>> {
        let mut slot = self
            .0
            .lock()
            .map_err(|_| candle_core::Error::Msg("a packed frozen weight was poisoned".into()))?;
        match slot.as_ref() {
            Some(p) if p.packs(w) => Ok(p.clone()),
            _ => {
                let p = Arc::new(FrozenBf16::pack(w)?);
                *slot = Some(p.clone());
                Ok(p)
            }
        }
    }

    /// The panels held now, if any.
    pub(crate) fn current(&self) -> Option<Arc<FrozenBf16>> {
        self.0.lock().ok().and_then(|p| p.clone())
    }

    /// Drops the panels (the next use packs again).
    pub(crate) fn forget(&self) {
        if let Ok(mut p) = self.0.lock() {
            *p = None;
        }
    }
}

impl std::fmt::Debug for PackedBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let packed = self.current().is_some();
        write!(f, "PackedBase(packed: {packed})")
    }
}

impl Linear {
    /// A projection from existing tensors.
    pub fn new(weight: Tensor, bias: Option<Tensor>) -> Result<Self> {
        Ok(Self::from_vars(
            Var::from_tensor(&weight)?,
            bias.map(|b| Var::from_tensor(&b)).transpose()?,
        ))
    }

    /// A projection of existing variables, without an adapter, in f32.
    pub(crate) fn from_vars(weight: Var, bias: Option<Var>) -> Self {
        Linear {
            weight,
            bias,
            lora: None,
            precision: Precision::F32,
            packed_base: PackedBase::default(),
        }
    }

    /// Drops the packed copy of a LoRA base (see the `packed_base` field): needed only after
    /// changing `weight` in place while an adapter trains.
    pub fn forget_packed_base(&self) {
        self.packed_base.forget();
    }

    /// The base packed for LoRA training in bf16, packed now if it was not yet; `None` when the
    /// products do not run on the CPU's bf16 kernels (f32 precision, an f64 model, a GPU).
    fn packed_base(&self, x: &Tensor) -> Result<Option<Arc<FrozenBf16>>> {
        let w = self.weight.as_tensor();
        if self.precision != Precision::Bf16
            || x.dtype() != DType::F32
            || w.dtype() != DType::F32
            || crate::ops::portable_wanted(x.device())
        {
            return Ok(None);
        }
        self.packed_base.get_or_pack(w).map(Some)
    }

    /// Output width.
    pub fn out_dim(&self) -> usize {
        self.weight.as_tensor().dims()[0]
    }

    /// Input width.
    pub fn in_dim(&self) -> usize {
        self.weight.as_tensor().dims().get(1).copied().unwrap_or(0)
    }

    /// Adds a LoRA adapter: A ~ U(-1/sqrt(in), 1/sqrt(in)) (Kaiming-uniform like PEFT), B = 0.
    pub fn attach_lora(&mut self, rank: usize, alpha: f64, rng: &mut ChaCha8Rng) -> Result<()> {
        let (out, inp) = (self.out_dim(), self.in_dim());
        let dtype = self.weight.dtype();
        let bound = 1.0 / (inp as f64).sqrt();
        let a: Vec<f64> = (0..rank * inp)
            .map(|_| rng.random_range(-bound..bound))
            .collect();
        let dev = self.weight.device();
        let a = Tensor::from_vec(a, (rank, inp), dev)?.to_dtype(dtype)?;
        let b = Tensor::zeros((out, rank), dtype, dev)?;
        self.lora = Some(LoraAdapter {
            a: Var::from_tensor(&a)?,
            b: Var::from_tensor(&b)?,
            scale: alpha / rank.max(1) as f64,
        });
        Ok(())
    }

    /// Applies the projection to `x` [..., in]. With `grad` false the weights are detached, so no
    /// graph is built (generation); with `grad` true and a LoRA adapter attached, the frozen base
    /// stays detached and only the adapter receives gradients.
    pub fn forward(&self, x: &Tensor, grad: bool) -> Result<Tensor> {
        let mut dims = x.dims().to_vec();
        let inp = dims.last().copied().unwrap_or(0);
        let x2 = x.reshape((x.elem_count() / inp.max(1), inp))?;
        let y = match &self.lora {
            // Training under LoRA: one fused op keeps only x, A and B for the backward pass.
            Some(l) if grad => self.adapter_op(&x2, l, true)?,
            // Scoring under LoRA in bf16: the training op itself, untracked, so log-probs
            // rescored before an update are the training forward's to the bit (there the
            // update's share is a bf16 product, in the generic path below an f32 one).
            Some(l) if self.packed_base(&x2)?.is_some() => self.adapter_op(&x2, l, false)?,
            // Generation and f32 scoring (nothing tracked) or full fine-tuning (no adapter, base
            // tracked).
            _ => {
                let y = if grad {
                    full_matmul(&x2, &pick(&self.weight, true), self.precision)?
                } else {
                    // Generation: frozen_matmul has a fast path for the few rows of decoding.
                    crate::ops::frozen_matmul_with(&x2, self.weight.as_tensor(), self.precision)?
                };
                self.add_bias_and_adapter(y, &x2, grad)?
            }
        };
        if let Some(last) = dims.last_mut() {
            *last = self.out_dim();
        }
        y.reshape(dims)
    }

    /// The fused LoRA op on `x2` [rows, in], with the adapter tracked or not (the frozen base
    /// never is).
    fn adapter_op(&self, x2: &Tensor, l: &LoraAdapter, track: bool) -> Result<Tensor> {
        let (w, bias) = (
            pick(&self.weight, false),
            self.bias.as_ref().map(|b| pick(b, false)),
        );
        let (a, b) = (pick(&l.a, track), pick(&l.b, track));
        match self.packed_base(x2)? {
            Some(p) => crate::ops::lora_linear_packed(x2, (&w, &p), bias.as_ref(), &a, &b, l.scale),
            None => crate::ops::lora_linear(x2, &w, bias.as_ref(), &a, &b, l.scale, self.precision),
        }
    }

    /// [`Linear::forward`], with the base product read from `packed` (W packed for generation)
    /// when given and no gradient is wanted.
    pub(crate) fn forward_with(
        &self,
        x: &Tensor,
        packed: Option<&PackedMatrix>,
        grad: bool,
    ) -> Result<Tensor> {
        match packed {
            Some(p) if !grad => {
                // In bf16 the adapter's share is the training op's bf16 product (rollouts and
                // training then compute the same policy); elsewhere an f32 product beside it.
                if let Some(l) = &self.lora {
                    if let Some(y) = p.matmul_lora(x, l.a.as_tensor(), l.b.as_tensor(), l.scale)? {
                        return match &self.bias {
                            Some(b) => y.broadcast_add(&pick(b, false)),
                            None => Ok(y),
                        };
                    }
                }
                self.add_bias_and_adapter(p.matmul(x)?, x, false)
            }
            _ => self.forward(x, grad),
        }
    }

    /// `y + bias + LoRA(x)` for the untracked adapter (generation) or a model without one.
    fn add_bias_and_adapter(&self, mut y: Tensor, x: &Tensor, grad: bool) -> Result<Tensor> {
        if let Some(b) = &self.bias {
            y = y.broadcast_add(&pick(b, grad))?;
        }
        if let Some(l) = &self.lora {
            let u = crate::ops::frozen_matmul(x, l.a.as_tensor())?;
            let delta = crate::ops::frozen_matmul(&u, l.b.as_tensor())?;
            y = (y + (delta * l.scale)?)?;
        }
        Ok(y)
    }

    /// An independent copy with every weight cast to `dtype` (f64 for finite-difference tests).
    pub fn to_dtype(&self, dtype: DType) -> Result<Self> {
        self.map_weights(&|t| t.to_dtype(dtype))
    }

    /// An independent copy with `f` applied to every weight, adapter included.
    pub(crate) fn map_weights(&self, f: &dyn Fn(&Tensor) -> Result<Tensor>) -> Result<Self> {
        let cast = |v: &Var| Var::from_tensor(&f(&v.as_tensor().detach())?);
        Ok(Linear {
            packed_base: PackedBase::default(),
            weight: cast(&self.weight)?,
            bias: self.bias.as_ref().map(cast).transpose()?,
            lora: self
                .lora
                .as_ref()
                .map(|l| -> Result<LoraAdapter> {
                    Ok(LoraAdapter {
                        a: cast(&l.a)?,
                        b: cast(&l.b)?,
                        scale: l.scale,
                    })
                })
                .transpose()?,
            precision: self.precision,
        })
    }
}

/// `x W^T` differentiable in both (a full fine-tune's projection), in `precision`.
pub(crate) fn full_matmul(x: &Tensor, w: &Tensor, precision: Precision) -> Result<Tensor> {
    if crate::ops::portable_wanted(x.device()) {
        crate::ops::portable_matmul_t(x, w, precision)
    } else if precision == Precision::Bf16 && x.dtype() == DType::F32 {
        crate::ops::linear_bf16(x, w)
    } else {
        x.matmul(&w.t()?)
    }
}

/// The tensor of a variable, attached to the autograd graph or detached from it.
pub(crate) fn pick(v: &Var, grad: bool) -> Tensor {
    if grad {
        v.as_tensor().clone()
    } else {
        v.as_tensor().detach()
    }
}

/// Seeded RNG for weight initialisation.
pub(crate) fn init_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}
