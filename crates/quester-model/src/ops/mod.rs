//! Custom CPU ops with hand-written backward passes.
//!
//! Attention is fused (scores never stored; see `attention`), and frozen weights get no
//! gradient work (`frozen_matmul`).
//!
//! candle's fast `softmax_last_dim`, `rms_norm` and `rope*` ops have no backward (the gradient
//! silently stops), and its elementwise ops run on one thread. These ops are multi-threaded with
//! rayon, work in f32 and f64 (f64 for finite-difference tests), and each backward is checked
//! against finite differences in its tests.
//!
//! On other devices (CUDA) each op runs its `portable` twin instead, written with candle's own
//! differentiable tensor ops.

/// Dispatch on the element type of a storage: runs `$body` with `$t` standing for f32 or f64
/// and wraps the `Vec` it returns in the matching `CpuStorage`; any other dtype is an error
/// naming the op. Every kernel below is generic over [`Float`], so this is their one match.
macro_rules! by_float {
    ($s:expr, $op:expr, |$t:ident| $body:expr) => {
        match $s {
            candle_core::CpuStorage::F32(_) => {
                type $t = f32;
                candle_core::CpuStorage::F32($body)
            }
            candle_core::CpuStorage::F64(_) => {
                type $t = f64;
                candle_core::CpuStorage::F64($body)
            }
            _ => candle_core::bail!("{}: f32 or f64 expected", $op),
        }
    };
}

mod attention;
mod attention_rows;
pub mod bf16;
mod bf16_linear;
mod entropy;
mod frozen_matmul;
mod gemm;
mod gemv;
mod logprob;
mod logprob_entropy;
mod lora_bf16;
mod lora_linear;
mod low_rank;
mod packed_matmul;
mod portable;
mod prefix_keys;
mod reduce;
mod rms_norm;
mod rope;
mod softmax;
mod swiglu;
mod tiles;
mod vexp;

pub use attention::{causal_attention, causal_attention_in};
pub use bf16_linear::{linear_bf16, FrozenBf16};
pub use entropy::softmax_entropy;
pub use frozen_matmul::{frozen_matmul, frozen_matmul_packed, frozen_matmul_with};
pub use logprob::gather_log_softmax;
pub use logprob_entropy::gather_log_softmax_and_entropy;
pub use lora_linear::{lora_linear, lora_linear_packed};
pub use low_rank::LowRank;
pub use packed_matmul::PackedMatrix;
pub use portable::with_portable_ops;
pub(crate) use portable::{matmul_t as portable_matmul_t, wanted as portable_wanted};
pub use prefix_keys::keys_with_prefix;
pub(crate) use reduce::lane_max;
pub use rms_norm::rms_norm;
pub use rope::{rope, rope_tables};
pub use softmax::softmax_last_dim;
pub use swiglu::swiglu;
pub(crate) use vexp::{exp_shifted_sum, ExpSlice};

use candle_core::{bail, CpuStorage, Layout, Result, Storage, Tensor, WithDType};

/// Float element types the kernels are written for.
pub(crate) trait Float:
    WithDType
    + num_traits::Float
    + Send
    + Sync
    + std::iter::Sum
    + std::ops::AddAssign
    + std::ops::MulAssign
    + gemv::Dot
    + vexp::ExpSlice
    + low_rank::LowRank
    + swiglu::SwiGluLanes
    + attention_rows::CacheElem<Self>
{
}
impl Float for f32 {}
impl Float for f64 {}

/// The contiguous data of a storage as a slice, or an error for strided layouts.
pub(crate) fn contiguous<'a, T: WithDType>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [T]> {
    let data = T::cpu_storage_as_slice(s)?;
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&data[a..b]),
        None => bail!("custom op needs a contiguous input"),
    }
}

/// The data of a contiguous CPU tensor, borrowed from its storage (`guard`, from
/// `t.storage_and_layout()`), for a custom op's backward pass.
pub(crate) fn host<'a, T: WithDType>(t: &Tensor, guard: &'a Storage) -> Result<&'a [T]> {
    let Storage::Cpu(s) = guard else {
        bail!("custom op: CPU tensors expected")
    };
    contiguous::<T>(s, t.layout())
}

/// Rows below this many elements in total are processed on the calling thread.
pub(crate) const PAR_MIN: usize = 1 << 14;

/// A copy of `src` (rows of `v`) that `body(n, row)` then changes in place, row by row, in
/// parallel when large. The output is not zeroed first: each row is written by its copy, so a
/// zeroed allocation's extra pass over the whole output (on one thread) is saved.
pub(crate) fn copied_rows_then<T: Float>(
    src: &[T],
    v: usize,
    body: impl Fn(usize, &mut [T]) + Sync + Send,
) -> Vec<T> {
    use std::mem::MaybeUninit;
    let n = src.len();
    if v == 0 || n == 0 {
        return src.to_vec();
    }
    let mut out: Vec<T> = Vec::with_capacity(n);
    let run = |(i, o): (usize, &mut [MaybeUninit<T>])| {
        for (d, &s) in o.iter_mut().zip(&src[i * v..]) {
            d.write(s);
        }
        // SAFETY: every element of `o` was written just above (the chunks of `src` and of
        // the output have one length), and MaybeUninit<T> has T's layout.
        let o = unsafe { &mut *(std::ptr::from_mut(o) as *mut [T]) };
        body(i, o);
    };
    let spare = &mut out.spare_capacity_mut()[..n];
    if n >= PAR_MIN {
        use rayon::prelude::*;
        spare.par_chunks_mut(v).enumerate().for_each(run);
    } else {
        spare.chunks_mut(v).enumerate().for_each(run);
    }
    // SAFETY: the chunks cover 0..n and each was written whole.
    unsafe { out.set_len(n) };
    out
}

/// Checks shared by the kernels' unit tests.
#[cfg(test)]
pub(crate) mod test_util {
    use candle_core::{Device, Shape, Tensor};
    use rand::{Rng, SeedableRng};

    /// A CPU tensor of `shape` drawn from normal(mean, std) by a seeded stream (Box-Muller), so
    /// a test sees the same numbers in every run (candle's own `randn` draws from an unseeded
    /// generator).
    pub(crate) fn seeded_randn(seed: u64, mean: f32, std: f32, shape: impl Into<Shape>) -> Tensor {
        seeded_randn_f64(seed, f64::from(mean), f64::from(std), shape)
            .to_dtype(candle_core::DType::F32)
            .expect("f64 to f32")
    }

    /// [`seeded_randn`] in f64.
    pub(crate) fn seeded_randn_f64(
        seed: u64,
        mean: f64,
        std: f64,
        shape: impl Into<Shape>,
    ) -> Tensor {
        let shape = shape.into();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let values: Vec<f64> = (0..shape.elem_count())
            .map(|_| {
                let u1 = rng.random::<f64>().max(f64::MIN_POSITIVE);
                let u2 = rng.random::<f64>();
                mean + std * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect();
        Tensor::from_vec(values, shape, &Device::Cpu).expect("as many values as the shape holds")
    }

    thread_local! {
        static NEXT_SEED: std::cell::Cell<u64> = const { std::cell::Cell::new(1000) };
    }

    /// A new seed at every call, counted per thread: a test's helpers draw distinct tensors,
    /// the same ones in every run of that test.
    pub(crate) fn next_seed() -> u64 {
        NEXT_SEED.with(|c| {
            let s = c.get();
            c.set(s + 1);
            s
        })
    }

    /// Asserts y [rows, out] = x [rows, inp] . W^T (W [out, inp]) within a relative `tol`,
    /// against the product summed in f64.
    pub(crate) fn assert_x_wt(
        y: &[f32],
        x: &[f32],
        w: &[f32],
        (rows, inp, out): (usize, usize, usize),
        tol: f64,
    ) {
        for r in 0..rows {
            for j in 0..out {
                let want: f64 = (0..inp)
                    .map(|k| f64::from(x[r * inp + k]) * f64::from(w[j * inp + k]))
                    .sum();
                let got = f64::from(y[r * out + j]);
                assert!(
                    (got - want).abs() < tol * (1.0 + want.abs()),
                    "[{r}, {j}]: {got} vs {want}"
                );
            }
        }
    }

    /// The largest |a - b| of two f32 tensors of one shape.
    pub(crate) fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b).map(|d| max_abs(&d)).expect("tensors of one shape")
    }

    /// The largest |x| of an f32 tensor.
    pub(crate) fn max_abs(x: &Tensor) -> f32 {
        x.abs()
            .and_then(|d| d.max_all()?.to_scalar::<f32>())
            .expect("an f32 tensor")
    }
}
