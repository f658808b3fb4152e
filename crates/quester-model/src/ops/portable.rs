//! The custom ops written with candle's own differentiable tensor ops, for devices our CPU kernels
//! do not run on (CUDA).
//!
//! Each function computes what its fused namesake computes (the tests compare values and
//! gradients on the CPU), and candle's autograd supplies the backward pass. The price is the
//! memory the fused ops avoid: attention materialises its [rows, S] scores and the log-prob
//! gather its log-softmax block, as an eager PyTorch model does.

use crate::precision::Precision;
use candle_core::{DType, Device, Result, Tensor, D};
use std::cell::Cell;

thread_local! {
    static FORCED: Cell<bool> = const { Cell::new(false) };
}

/// Whether ops on tensors of `device` take this path: always off the CPU, and on the CPU inside
/// [`with_portable_ops`].
pub(crate) fn wanted(device: &Device) -> bool {
    !device.is_cpu() || FORCED.with(Cell::get)
}

/// Runs `f` with the portable ops on the CPU too (on the calling thread), so that the path a GPU
/// takes can be checked against the fused kernels on a machine without one.
pub fn with_portable_ops<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|c| c.replace(true)));
    f()
}

/// `x / sqrt(mean(x^2) + eps) * w` over the last dimension.
pub(crate) fn rms_norm(x: &Tensor, w: &Tensor, eps: f64) -> Result<Tensor> {
    let ms = x.sqr()?.mean_keepdim(D::Minus1)?;
    x.broadcast_div(&(ms + eps)?.sqrt()?)?.broadcast_mul(w)
}

/// Softmax over the last dimension.
pub(crate) fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    candle_nn::ops::softmax(x, D::Minus1)
}

/// `ln softmax(logits[n])[targets[n]]` for logits [N, V] and targets [N].
pub(crate) fn gather_log_softmax(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    candle_nn::ops::log_softmax(logits, D::Minus1)?
        .gather(&targets.to_dtype(DType::U32)?.unsqueeze(1)?, 1)?
        .squeeze(1)
}

/// Entropy of `softmax(logits[n])` for logits [N, V].
pub(crate) fn softmax_entropy(logits: &Tensor) -> Result<Tensor> {
    let logp = candle_nn::ops::log_softmax(logits, D::Minus1)?;
    (logp.exp()? * logp)?.sum(D::Minus1)?.neg()
}

/// `silu(gate) * up`.
pub(crate) fn swiglu(gate: &Tensor, up: &Tensor) -> Result<Tensor> {
    gate.silu()? * up
}

/// Rotate-half rope of `x` [B, T, H, D] by the tables [B, T, D/2].
pub(crate) fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let half = x.dim(D::Minus1)? / 2;
    let (x1, x2) = (
        x.narrow(D::Minus1, 0, half)?,
        x.narrow(D::Minus1, half, half)?,
    );
    let (c, s) = (cos.unsqueeze(2)?, sin.unsqueeze(2)?);
    let lo = (x1.broadcast_mul(&c)? - x2.broadcast_mul(&s)?)?;
    let hi = (x2.broadcast_mul(&c)? + x1.broadcast_mul(&s)?)?;
    Tensor::cat(&[lo, hi], D::Minus1)
}

/// `x` [rows, in] times the transpose of `w` [out, in], in `precision`: in bf16 both operands
/// are rounded to bf16 and the product (cuBLAS accumulates in f32 and rounds its output to bf16,
/// as under `torch.autocast`) is returned in f32. Differentiable in both.
pub(crate) fn matmul_t(x: &Tensor, w: &Tensor, precision: Precision) -> Result<Tensor> {
    if precision == Precision::Bf16 && x.dtype() == DType::F32 {
        x.to_dtype(DType::BF16)?
            .matmul(&w.to_dtype(DType::BF16)?.t()?)?
            .to_dtype(DType::F32)
    } else {
        x.matmul(&w.t()?)
    }
}

/// [`matmul_t`] with no gradient for `w`.
pub(crate) fn frozen_matmul(x: &Tensor, w: &Tensor, precision: Precision) -> Result<Tensor> {
    matmul_t(x, &w.detach(), precision)
}

/// `x W^T (+ bias) + scale (x A^T) B^T` with W and the bias frozen; the product with W in
/// `precision`, the adapter's in f32 (as on the CPU).
pub(crate) fn lora_linear(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    scale: f64,
    precision: Precision,
) -> Result<Tensor> {
    let mut y = frozen_matmul(x, w, precision)?;
    if let Some(bias) = bias {
        y = y.broadcast_add(&bias.detach())?;
    }
    y + (x.matmul(&a.t()?)?.matmul(&b.t()?)? * scale)?
}

/// Grouped causal attention with the semantics of [`super::causal_attention`]: scores of every
/// query row against every key, hidden keys pushed to -1e9 before the softmax, and rows that see
/// no key zeroed after it.
pub(crate) fn causal_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    key_mask: &[Vec<u32>],
    past: usize,
) -> Result<Tensor> {
    let (bias, seen) = attention_mask(q, k, key_mask, past)?;
    let scores = q
        .contiguous()?
        .matmul(&k.contiguous()?.t()?)?
        .broadcast_add(&bias)?;
    softmax_last_dim(&scores)?
        .matmul(&v.contiguous()?)?
        .broadcast_mul(&seen)
}

/// The gradients (dq, dk, dv) of [`causal_attention`] for the output gradient `grad`, from the
/// probabilities recomputed here: the backward pass of the fused GPU forward, which keeps no
/// probabilities, so only one layer's [rows, S] block is alive at a time.
pub(crate) fn causal_attention_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    key_mask: &[Vec<u32>],
    past: usize,
    grad: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    // Detached: the results must not hold this recomputation's graph alive in the gradients.
    let (q, k, v) = (
        q.detach().contiguous()?,
        k.detach().contiguous()?,
        v.detach().contiguous()?,
    );
    let (bias, seen) = attention_mask(&q, &k, key_mask, past)?;
    let p = softmax_last_dim(&q.matmul(&k.t()?)?.broadcast_add(&bias)?)?;
    // A row that sees no key outputs zeros whatever its inputs: its gradient is zero.
    let go = grad.detach().broadcast_mul(&seen)?;
    let dv = p.t()?.matmul(&go)?;
    let dp = go.matmul(&v.t()?)?;
    // Softmax backward: dS = P * (dP - rowsum(P * dP)).
    let ds = (&p * dp.broadcast_sub(&(&p * &dp)?.sum_keepdim(D::Minus1)?)?)?;
    let dq = ds.matmul(&k)?;
    let dk = ds.t()?.matmul(&q)?;
    Ok((dq, dk, dv))
}

/// The additive mask [B, 1, rows, S] (0 where a key is visible, -1e9 where not) and the row
/// flags [B, 1, rows, 1] (1 where the row sees at least one key).
fn attention_mask(
    q: &Tensor,
    k: &Tensor,
    key_mask: &[Vec<u32>],
    past: usize,
) -> Result<(Tensor, Tensor)> {
    let (b, _, rows, _) = q.dims4()?;
    let s = k.dim(2)?;
    let t = s - past;
    let mut bias = vec![-1e9f32; b * rows * s];
    let mut seen = vec![0f32; b * rows];
    for (bi, mask) in key_mask.iter().enumerate() {
        for r in 0..rows {
            let row = bi * rows + r;
            for (j, _) in mask[..=past + r % t]
                .iter()
                .enumerate()
                .filter(|(_, &m)| m != 0)
            {
                bias[row * s + j] = 0.0;
                seen[row] = 1.0;
            }
        }
    }
    let dev = q.device();
    let bias = Tensor::from_vec(bias, (b, 1, rows, s), dev)?.to_dtype(q.dtype())?;
    let seen = Tensor::from_vec(seen, (b, 1, rows, 1), dev)?.to_dtype(q.dtype())?;
    Ok((bias, seen))
}
