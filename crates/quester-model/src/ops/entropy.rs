//! Entropy of the softmax of each row of logits, `H = -sum_i p_i ln p_i`, with its backward
//! (`dH/dz_j = -p_j (ln p_j + H)`), for the entropy bonus of the policy loss. Like the fused
//! log-prob gather it never materialises the probability matrix.

use super::{contiguous, Float, PAR_MIN};
use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// For logits [N, V] returns [N]: the entropy (nats) of `softmax(logits[n])`. Differentiable.
pub fn softmax_entropy(logits: &Tensor) -> Result<Tensor> {
    if super::portable::wanted(logits.device()) {
        return super::portable::softmax_entropy(logits);
    }
    logits.contiguous()?.apply_op1(SoftmaxEntropy)
}

struct SoftmaxEntropy;
struct SoftmaxEntropyBwd;

/// Stack chunk for the exponentials: the rows are borrowed and the vocabulary is large.
const EXP_CHUNK: usize = 512;

/// (log-sum-exp, entropy) of one row.
fn row_stats<T: Float>(row: &[T]) -> (T, T) {
    let m = row
        .iter()
        .fold(T::neg_infinity(), |a, &b| num_traits::Float::max(a, b));
    let (mut s, mut sz) = (T::zero(), T::zero());
    let mut buf = [T::zero(); EXP_CHUNK];
    for z in row.chunks(EXP_CHUNK) {
        let e = &mut buf[..z.len()];
        e.copy_from_slice(z);
        T::exp_shifted(e, m);
        for (&e, &z) in e.iter().zip(z) {
            s += e;
            sz += e * z;
        }
    }
    let lse = m + s.ln();
    // H = lse - E_p[z]
    (lse, lse - sz / s)
}

fn fwd<T: Float>(x: &[T], v: usize) -> Vec<T> {
    let f = |n: usize| row_stats(&x[n * v..(n + 1) * v]).1;
    let n = x.len() / v.max(1);
    if x.len() >= PAR_MIN {
        (0..n).into_par_iter().map(f).collect()
    } else {
        (0..n).map(f).collect()
    }
}

fn bwd<T: Float>(x: &[T], g: &[T], v: usize) -> Vec<T> {
    let mut out = vec![T::zero(); x.len()];
    let body = |(n, o): (usize, &mut [T])| {
        let row = &x[n * v..(n + 1) * v];
        let (lse, h) = row_stats(row);
        // o = p first (one vector pass), then -g p (ln p + H).
        o.copy_from_slice(row);
        T::exp_shifted(o, lse);
        for (oi, &z) in o.iter_mut().zip(row) {
            *oi = -g[n] * *oi * (z - lse + h);
        }
    };
    if x.len() >= PAR_MIN {
        out.par_chunks_mut(v).enumerate().for_each(body);
    } else {
        out.chunks_mut(v).enumerate().for_each(body);
    }
    out
}

impl CustomOp1 for SoftmaxEntropy {
    fn name(&self) -> &'static str {
        "quester-softmax-entropy"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (n, v) = l.shape().dims2()?;
        let out = by_float!(s, "softmax_entropy", |T| fwd(contiguous::<T>(s, l)?, v));
        Ok((out, Shape::from(n)))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(arg.apply_op2_no_bwd(
            &grad.contiguous()?,
            &SoftmaxEntropyBwd,
        )?))
    }
}

impl CustomOp2 for SoftmaxEntropyBwd {
    fn name(&self) -> &'static str {
        "quester-softmax-entropy-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (_, v) = l1.shape().dims2()?;
        let out = by_float!(s1, "softmax_entropy bwd", |T| bwd(
            contiguous::<T>(s1, l1)?,
            contiguous::<T>(s2, l2)?,
            v,
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
    fn uniform_and_peaked_rows() {
        let x = Tensor::new(
            &[[0.0f64, 0.0, 0.0, 0.0], [50.0, 0.0, 0.0, 0.0]],
            &Device::Cpu,
        )
        .unwrap();
        let h: Vec<f64> = softmax_entropy(&x).unwrap().to_vec1().unwrap();
        assert!((h[0] - 4f64.ln()).abs() < 1e-12);
        assert!(h[1].abs() < 1e-15 + 1e-18 && h[1] >= -1e-12);
        // p = (0.5, 0.25, 0.25): H = 0.5 ln2 + 2 * 0.25 ln4 = 1.5 ln 2.
        let y = Tensor::new(&[[2f64.ln(), 0.0, 0.0]], &Device::Cpu).unwrap();
        let h: Vec<f64> = softmax_entropy(&y).unwrap().to_vec1().unwrap();
        assert!((h[0] - 1.5 * 2f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let x = seeded_randn_f64(1, 0.0, 2.0, (3, 7));
        let w = seeded_randn_f64(2, 0.0, 1.0, 3);
        check_gradients(&[x], |v| (softmax_entropy(&v[0])? * &w)?.sum_all(), 1e-6).unwrap();
    }
}
