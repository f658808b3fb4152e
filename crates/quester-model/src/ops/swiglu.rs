//! Fused SwiGLU activation `silu(gate) * up`, multi-threaded, with backward.

use super::{contiguous, Float, PAR_MIN};

#[cfg(target_arch = "x86_64")]
mod avx512;
use candle_core::{bail, CpuStorage, CustomOp2, CustomOp3, Layout, Result, Shape, Tensor};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// `silu(gate) * up`, differentiable in both.
pub fn swiglu(gate: &Tensor, up: &Tensor) -> Result<Tensor> {
    if super::portable::wanted(gate.device()) {
        return super::portable::swiglu(gate, up);
    }
    gate.contiguous()?.apply_op2(&up.contiguous()?, SwiGlu)
}

struct SwiGlu;
struct SwiGluBwd;

const CHUNK: usize = 4096;

/// `out[i] <- sigmoid(g[i])`, the exponentials a slice at a time (the scalar `exp` was most of
/// this op). `out` may be uninitialised: its first pass writes every element, and the written
/// slice is returned. Outputs are not zeroed first: a zeroed allocation is one more pass over
/// the whole output, on one thread.
fn sigmoid_into<'a, T: Float>(g: &[T], out: &'a mut [MaybeUninit<T>]) -> &'a mut [T] {
    assert_eq!(g.len(), out.len(), "swiglu: chunk lengths");
    out.iter_mut().zip(g).for_each(|(o, &x)| {
        o.write(-x);
    });
    // SAFETY: every element was written just above, and MaybeUninit<T> has T's layout.
    let out = unsafe { &mut *(std::ptr::from_mut(out) as *mut [T]) };
    T::exp_shifted(out, T::zero());
    out.iter_mut().for_each(|o| *o = T::one() / (T::one() + *o));
    out
}

/// SwiGLU's passes over one chunk in vector lanes, where the type and the CPU have them.
pub(crate) trait SwiGluLanes: Sized {
    /// `out[i] <- silu(g[i]) u[i]` if done here (then `true`; every element written).
    fn forward_lanes(_g: &[Self], _u: &[Self], _out: &mut [MaybeUninit<Self>]) -> bool {
        false
    }
    /// Both gradients into `dg` and `du` if done here (then `true`; every element written).
    fn backward_lanes(
        _gud: (&[Self], &[Self], &[Self]),
        _dg: &mut [MaybeUninit<Self>],
        _du: &mut [MaybeUninit<Self>],
    ) -> bool {
        false
    }
}

impl SwiGluLanes for f64 {}

impl SwiGluLanes for f32 {
    fn forward_lanes(g: &[f32], u: &[f32], out: &mut [MaybeUninit<f32>]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above); the callee checks lengths.
            unsafe { avx512::forward(g, u, out) };
            return true;
        }
        let _ = (g, u, out);
        false
    }

    fn backward_lanes(
        gud: (&[f32], &[f32], &[f32]),
        dg: &mut [MaybeUninit<f32>],
        du: &mut [MaybeUninit<f32>],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: as in `forward_lanes`.
            unsafe { avx512::backward(gud, dg, du) };
            return true;
        }
        let _ = (gud, dg, du);
        false
    }
}

/// The portable forward over one chunk: `out[i] <- g[i] sigmoid(g[i]) u[i]`, every element.
fn forward_chunk<T: Float>(g: &[T], u: &[T], out: &mut [MaybeUninit<T>]) {
    let o = sigmoid_into(g, out);
    for ((oi, &gi), &ui) in o.iter_mut().zip(g).zip(u) {
        *oi = gi * *oi * ui;
    }
}

/// The portable backward over one chunk: both gradients, every element.
fn backward_chunk<T: Float>(
    (g, u, dy): (&[T], &[T], &[T]),
    dg: &mut [MaybeUninit<T>],
    du: &mut [MaybeUninit<T>],
) {
    // dg holds sigmoid(g) until it is overwritten by d_gate; du is written whole.
    let a = sigmoid_into(g, dg);
    for i in 0..a.len() {
        let s = a[i];
        a[i] = dy[i] * u[i] * s * (T::one() + g[i] * (T::one() - s));
        du[i].write(dy[i] * g[i] * s);
    }
}

fn fwd<T: Float>(g: &[T], u: &[T]) -> Vec<T> {
    let n = g.len();
    let mut out: Vec<T> = Vec::with_capacity(n);
    let body = |(k, o): (usize, &mut [MaybeUninit<T>])| {
        let at = k * CHUNK..k * CHUNK + o.len();
        let (g, u) = (&g[at.clone()], &u[at]);
        if !T::forward_lanes(g, u, o) {
            forward_chunk(g, u, o);
        }
    };
    let spare = &mut out.spare_capacity_mut()[..n];
    if n >= PAR_MIN {
        spare.par_chunks_mut(CHUNK).enumerate().for_each(body);
    } else {
        spare.chunks_mut(CHUNK).enumerate().for_each(body);
    }
    // SAFETY: the chunks cover 0..n and each pass writes its chunk whole.
    unsafe { out.set_len(n) };
    out
}

/// Returns d_gate followed by d_up.
fn bwd<T: Float>(g: &[T], u: &[T], dy: &[T]) -> Vec<T> {
    let n = g.len();
    assert!(u.len() == n && dy.len() == n, "swiglu backward: lengths");
    let mut out: Vec<T> = Vec::with_capacity(2 * n);
    let (dg, du) = out.spare_capacity_mut()[..2 * n].split_at_mut(n);
    type Halves<'a, T> = (&'a mut [MaybeUninit<T>], &'a mut [MaybeUninit<T>]);
    let body = |(k, (a, b)): (usize, Halves<T>)| {
        let at = k * CHUNK..k * CHUNK + a.len();
        let (g, u, dy) = (&g[at.clone()], &u[at.clone()], &dy[at]);
        if !T::backward_lanes((g, u, dy), a, b) {
            backward_chunk((g, u, dy), a, b);
        }
    };
    if n >= PAR_MIN {
        dg.par_chunks_mut(CHUNK)
            .zip(du.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(body);
    } else {
        dg.chunks_mut(CHUNK)
            .zip(du.chunks_mut(CHUNK))
            .enumerate()
            .for_each(body);
    }
    // SAFETY: the chunk pairs cover 0..n of both halves (same chunking, same length), and the
    // body wrote every element of each.
    unsafe { out.set_len(2 * n) };
    out
}

impl CustomOp2 for SwiGlu {
    fn name(&self) -> &'static str {
        "quester-swiglu"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        if l1.shape() != l2.shape() {
            bail!("swiglu: shapes differ {:?} {:?}", l1.shape(), l2.shape());
        }
        let out = by_float!(s1, "swiglu", |T| fwd(
            contiguous::<T>(s1, l1)?,
            contiguous::<T>(s2, l2)?
        ));
        Ok((out, l1.shape().clone()))
    }

    fn bwd(
        &self,
        gate: &Tensor,
        up: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let n = gate.elem_count();
        let packed = gate.apply_op3_no_bwd(up, &grad.contiguous()?, &SwiGluBwd)?;
        let dg = packed.narrow(0, 0, n)?.reshape(gate.shape())?;
        let du = packed.narrow(0, n, n)?.reshape(gate.shape())?;
        Ok((Some(dg), Some(du)))
    }
}

impl CustomOp3 for SwiGluBwd {
    fn name(&self) -> &'static str {
        "quester-swiglu-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let out = by_float!(s1, "swiglu bwd", |T| bwd(
            contiguous::<T>(s1, l1)?,
            contiguous::<T>(s2, l2)?,
            contiguous::<T>(s3, l3)?,
        ));
        Ok((out, Shape::from(2 * l1.shape().elem_count())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::check_gradients;
    use crate::ops::test_util::*;
    use candle_core::Device;

    #[test]
    fn matches_formula() {
        let g = Tensor::new(&[0.0f32, 1.0, -2.0], &Device::Cpu).unwrap();
        let u = Tensor::new(&[3.0f32, 2.0, 1.0], &Device::Cpu).unwrap();
        let y = swiglu(&g, &u).unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(y[0], 0.0);
        assert!((y[1] - 2.0 / (1.0 + (-1.0f32).exp())).abs() < 1e-6);
        assert!((y[2] - (-2.0 / (1.0 + 2.0f32.exp()))).abs() < 1e-6);
    }

    /// Past the parallel threshold, in whole chunks and a ragged last one (the outputs are
    /// written chunk by chunk into uninitialised memory): every element, both passes, equals
    /// the formula.
    #[test]
    fn long_inputs_match_the_formula_in_every_chunk() {
        let n = 5 * CHUNK + 37;
        assert!(n >= PAR_MIN);
        let v = |seed: usize| -> Vec<f64> {
            (0..n)
                .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f64 / 2003.0 - 0.5) * 8.0)
                .collect()
        };
        let (g, u, dy) = (v(1), v(2), v(3));
        let y = fwd(&g, &u);
        let d = bwd(&g, &u, &dy);
        assert_eq!((y.len(), d.len()), (n, 2 * n));
        for i in 0..n {
            let s = 1.0 / (1.0 + (-g[i]).exp());
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * (1.0 + b.abs());
            assert!(close(y[i], g[i] * s * u[i]), "y[{i}]");
            let dg = dy[i] * u[i] * s * (1.0 + g[i] * (1.0 - s));
            assert!(close(d[i], dg), "d_gate[{i}]");
            assert!(close(d[n + i], dy[i] * g[i] * s), "d_up[{i}]");
        }
    }

    /// The f32 lanes give the portable passes' results bit for bit, over whole vectors and a
    /// ragged tail, with zeros of both signs, saturating inputs, infinities and NaN (a NaN
    /// equals any NaN: the sign of the NaN a pass returns is not part of its contract).
    #[test]
    fn f32_lanes_equal_the_portable_passes_bit_for_bit() {
        let n = 16 * 9 + 7;
        let mut g: Vec<f32> = (0..n)
            .map(|i| (((i * 7919) % 2003) as f32 / 2003.0 - 0.5) * 40.0)
            .collect();
        g[..8].copy_from_slice(&[0.0, -0.0, 95.0, -95.0, 120.0, -120.0, 1e-30, -1e-30]);
        g[8..11].copy_from_slice(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
        let u: Vec<f32> = (0..n)
            .map(|i| ((i * 31 % 17) as f32 - 8.0) * 0.37)
            .collect();
        let dy: Vec<f32> = (0..n)
            .map(|i| ((i * 13 % 11) as f32 - 5.0) * 0.21)
            .collect();
        let bits = |v: &[MaybeUninit<f32>]| -> Vec<u32> {
            // SAFETY: every pass below writes its output whole.
            v.iter()
                .map(|x| unsafe { x.assume_init() })
                .map(|x| if x.is_nan() { f32::NAN } else { x }.to_bits())
                .collect()
        };
        let blank = || vec![MaybeUninit::<f32>::uninit(); n];
        for len in [n, 16 * 9, 5, 0] {
            let (g, u, dy) = (&g[..len], &u[..len], &dy[..len]);
            let (mut want, mut got) = (blank(), blank());
            forward_chunk(g, u, &mut want[..len]);
            if !f32::forward_lanes(g, u, &mut got[..len]) {
                return; // no vector lanes on this CPU: the portable pass is the only one
            }
            assert_eq!(bits(&got[..len]), bits(&want[..len]), "forward, {len}");
            let (mut wa, mut wb, mut ga, mut gb) = (blank(), blank(), blank(), blank());
            backward_chunk((g, u, dy), &mut wa[..len], &mut wb[..len]);
            assert!(f32::backward_lanes(
                (g, u, dy),
                &mut ga[..len],
                &mut gb[..len]
            ));
            assert_eq!(bits(&ga[..len]), bits(&wa[..len]), "d_gate, {len}");
            assert_eq!(bits(&gb[..len]), bits(&wb[..len]), "d_up, {len}");
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let g = seeded_randn_f64(1, 0.0, 2.0, (3, 10));
        let u = seeded_randn_f64(2, 0.0, 1.0, (3, 10));
        let proj = seeded_randn_f64(3, 0.0, 1.0, (3, 10));
        check_gradients(
            &[g, u],
            |v| (swiglu(&v[0], &v[1])? * &proj)?.sum_all(),
            1e-6,
        )
        .unwrap();
    }
}
