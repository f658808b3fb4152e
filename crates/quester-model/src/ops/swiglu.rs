//! Fused SwiGLU activation `silu(gate) * up`, multi-threaded, with backward.

use super::{contiguous, Float, PAR_MIN};
use candle_core::{bail, CpuStorage, CustomOp2, CustomOp3, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

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
/// this op).
fn sigmoid_into<T: Float>(g: &[T], out: &mut [T]) {
    out.iter_mut().zip(g).for_each(|(o, &x)| *o = -x);
    T::exp_shifted(out, T::zero());
    out.iter_mut().for_each(|o| *o = T::one() / (T::one() + *o));
}

fn fwd<T: Float>(g: &[T], u: &[T]) -> Vec<T> {
    let mut out = vec![T::zero(); g.len()];
    let body = |(k, o): (usize, &mut [T])| {
        let at = k * CHUNK..k * CHUNK + o.len();
        let (g, u) = (&g[at.clone()], &u[at]);
        sigmoid_into(g, o);
        for ((oi, &gi), &ui) in o.iter_mut().zip(g).zip(u) {
            *oi = gi * *oi * ui;
        }
    };
    if g.len() >= PAR_MIN {
        out.par_chunks_mut(CHUNK).enumerate().for_each(body);
    } else {
        out.chunks_mut(CHUNK).enumerate().for_each(body);
    }
    out
}

/// Returns d_gate followed by d_up.
fn bwd<T: Float>(g: &[T], u: &[T], dy: &[T]) -> Vec<T> {
    let n = g.len();
    let mut out = vec![T::zero(); 2 * n];
    let (dg, du) = out.split_at_mut(n);
    let body = |(k, (a, b)): (usize, (&mut [T], &mut [T]))| {
        let at = k * CHUNK..k * CHUNK + a.len();
        let (g, u, dy) = (&g[at.clone()], &u[at.clone()], &dy[at]);
        // a holds sigmoid(g) until it is overwritten by d_gate.
        sigmoid_into(g, a);
        for i in 0..a.len() {
            let s = a[i];
            a[i] = dy[i] * u[i] * s * (T::one() + g[i] * (T::one() - s));
            b[i] = dy[i] * g[i] * s;
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

    #[test]
    fn gradient_matches_finite_differences() {
        let dev = Device::Cpu;
        let g = Tensor::randn(0f64, 2.0, (3, 10), &dev).unwrap();
        let u = Tensor::randn(0f64, 1.0, (3, 10), &dev).unwrap();
        let proj = Tensor::randn(0f64, 1.0, (3, 10), &dev).unwrap();
        check_gradients(
            &[g, u],
            |v| (swiglu(&v[0], &v[1])? * &proj)?.sum_all(),
            1e-6,
        )
        .unwrap();
    }
}
