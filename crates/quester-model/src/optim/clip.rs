//! Global L2 grad-norm clipping, as `torch.nn.utils.clip_grad_norm_`: the norm is taken over all
//! gradients together, and when it exceeds `max_norm` every gradient is scaled by
//! `max_norm / (norm + 1e-6)`. The scale is handed to [`super::AdamW::step`], which applies it
//! inside its fused pass, so gradients are never rewritten.

use super::OptimError;
use candle_core::backprop::GradStore;
use candle_core::{CpuStorage, DType, Storage, Tensor, Var};
use rayon::prelude::*;

/// The global gradient norm before clipping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradNorm {
    /// L2 norm over every gradient (NaN or infinite when a gradient is).
    pub norm: f64,
}

impl GradNorm {
    /// False when the norm is NaN or infinite: the caller must skip the update.
    pub fn is_finite(&self) -> bool {
        self.norm.is_finite()
    }
}

/// L2 norm over the gradients of `params` (parameters without a gradient count as zero).
/// Sums of squares are accumulated in f64, in parallel.
pub fn global_grad_norm(
    params: &[(String, Var)],
    grads: &GradStore,
) -> Result<GradNorm, OptimError> {
    let mut total = 0f64;
    let mut on_device = Vec::new();
    for (name, var) in params {
        let Some(g) = grads.get(var.as_tensor()) else {
            continue;
        };
        if g.dtype() != DType::F32 {
            return Err(OptimError::Param {
                name: name.clone(),
                what: format!("gradient has dtype {:?}, expected f32", g.dtype()),
            });
        }
        let g = g.contiguous()?;
        // The device path also runs on the CPU inside `with_portable_ops`, where tests see it.
        let on_cpu = if crate::ops::portable_wanted(g.device()) {
            None
        } else {
            let (storage, layout) = g.storage_and_layout();
            match (&*storage, layout.contiguous_offsets()) {
                (Storage::Cpu(CpuStorage::F32(data)), Some((a, b))) => {
                    Some(sum_squares(&data[a..b]))
                }
                _ => None,
            }
        };
        match on_cpu {
            Some(s) => total += s,
            // Other devices: reduced there, one scalar per parameter kept on the device.
            None => on_device.push(g.sqr()?.sum_all()?.to_dtype(DType::F64)?.reshape(1)?),
        }
    }
    if !on_device.is_empty() {
        // One copy to the host for all of them, not one synchronisation per parameter.
        total += Tensor::cat(&on_device, 0)?.sum_all()?.to_scalar::<f64>()?;
    }
    Ok(GradNorm { norm: total.sqrt() })
}

fn sum_squares(x: &[f32]) -> f64 {
    x.par_chunks(1 << 14)
        .map(|c| c.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>())
        .sum()
}

/// The factor to multiply gradients by so that their norm is at most `max_norm`: 1.0 when the
/// norm is already within bounds, when `max_norm <= 0` (clipping off) or when the norm is not
/// finite (the caller skips that update anyway).
pub fn clip_scale(norm: GradNorm, max_norm: f64) -> f32 {
    if max_norm <= 0.0 || !norm.is_finite() {
        return 1.0;
    }
    let coef = max_norm / (norm.norm + 1e-6);
    coef.min(1.0) as f32
}
