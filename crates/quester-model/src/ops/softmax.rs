//! Softmax over the last dimension with a backward pass.

use super::{contiguous, Float, PAR_MIN};
use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// Differentiable softmax over the last dimension.
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    if super::portable::wanted(x.device()) {
        return super::portable::softmax_last_dim(x);
    }
    x.contiguous()?.apply_op1(Softmax)
}

struct Softmax;
struct SoftmaxBwd;

fn for_rows<T: Float>(out: &mut [T], d: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if out.len() >= PAR_MIN {
        out.par_chunks_mut(d).enumerate().for_each(|(r, o)| f(r, o));
    } else {
        out.chunks_mut(d).enumerate().for_each(|(r, o)| f(r, o));
    }
}

fn fwd<T: Float>(x: &[T], d: usize) -> Vec<T> {
    let mut out = vec![T::zero(); x.len()];
    for_rows(&mut out, d, |r, o| {
        let row = &x[r * d..(r + 1) * d];
        let m = row
            .iter()
            .fold(T::neg_infinity(), |a, &b| num_traits::Float::max(a, b));
        o.copy_from_slice(row);
        T::exp_shifted(o, m);
        let s: T = o.iter().copied().sum();
        let inv = T::one() / s;
        o.iter_mut().for_each(|v| *v *= inv);
    });
    out
}

fn bwd<T: Float>(y: &[T], g: &[T], d: usize) -> Vec<T> {
    let mut out = vec![T::zero(); y.len()];
    for_rows(&mut out, d, |r, o| {
        let yr = &y[r * d..(r + 1) * d];
        let gr = &g[r * d..(r + 1) * d];
        let dot: T = yr.iter().zip(gr).map(|(&a, &b)| a * b).sum();
        for i in 0..d {
            o[i] = yr[i] * (gr[i] - dot);
        }
    });
    out
}

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "quester-softmax"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let d = l.shape().dims().last().copied().unwrap_or(1).max(1);
        let out = by_float!(s, "softmax", |T| fwd(contiguous::<T>(s, l)?, d));
        Ok((out, l.shape().clone()))
    }

    fn bwd(&self, _arg: &Tensor, res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(
            res.apply_op2_no_bwd(&grad.contiguous()?, &SoftmaxBwd)?,
        ))
    }
}

impl CustomOp2 for SoftmaxBwd {
    fn name(&self) -> &'static str {
        "quester-softmax-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let d = l1.shape().dims().last().copied().unwrap_or(1).max(1);
        let out = by_float!(s1, "softmax bwd", |T| bwd(
            contiguous::<T>(s1, l1)?,
            contiguous::<T>(s2, l2)?,
            d,
        ));
        Ok((out, l1.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::check_gradients;
    use crate::ops::test_util::*;
    use candle_core::Device;

    #[test]
    fn rows_sum_to_one_and_masked_entries_vanish() {
        let x = Tensor::new(&[[1.0f32, 2.0, -1e9], [0.0, 0.0, 0.0]], &Device::Cpu).unwrap();
        let y = softmax_last_dim(&x).unwrap().to_vec2::<f32>().unwrap();
        assert!((y[0][0] + y[0][1] - 1.0).abs() < 1e-6);
        assert_eq!(y[0][2], 0.0);
        assert!((y[1][0] - 1.0 / 3.0).abs() < 1e-6);
        let e = (1.0f32).exp();
        assert!((y[0][1] - e / (1.0 + e)).abs() < 1e-6);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let x = seeded_randn_f64(1, 0.0, 2.0, (2, 3, 7));
        let proj = seeded_randn_f64(2, 0.0, 1.0, (2, 3, 7));
        check_gradients(
            &[x],
            |v| (softmax_last_dim(&v[0])? * &proj)?.sum_all(),
            1e-6,
        )
        .unwrap();
    }
}
