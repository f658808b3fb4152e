//! Fused `log_softmax(logits)[target]`: the log-probability of one target token per row,
//! without materialising the log-softmax matrix.

use super::reduce::{lane_max, lane_sum};
use super::{contiguous, copied_rows_then, Float, PAR_MIN};
use candle_core::{bail, CpuStorage, CustomOp2, CustomOp3, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// For logits [N, V] and targets [N] (u32), returns [N] with `ln softmax(logits[n])[targets[n]]`.
/// Differentiable in `logits`.
pub fn gather_log_softmax(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    if super::portable::wanted(logits.device()) {
        return super::portable::gather_log_softmax(logits, targets);
    }
    logits
        .contiguous()?
        .apply_op2(&targets.contiguous()?, GatherLogSoftmax)
}

struct GatherLogSoftmax;
struct GatherLogSoftmaxBwd;

/// ln sum e^row, the max and the sums in lanes (`super::reduce`; `logprob_entropy` computes it
/// the same way, so the two ops give the same bits).
fn log_sum_exp<T: Float>(row: &[T]) -> T {
    let m = lane_max(row);
    // e^(v - m) in stack chunks: the row is borrowed and the vocabulary is large.
    let mut buf = [T::zero(); 512];
    let mut s = T::zero();
    for chunk in row.chunks(buf.len()) {
        let b = &mut buf[..chunk.len()];
        b.copy_from_slice(chunk);
        T::exp_shifted(b, m);
        s += lane_sum(b);
    }
    m + s.ln()
}

fn fwd<T: Float>(x: &[T], t: &[u32], v: usize) -> Result<Vec<T>> {
    if let Some(&bad) = t.iter().find(|&&t| t as usize >= v) {
        bail!("gather_log_softmax: target {bad} out of vocabulary {v}");
    }
    let f = |n: usize| x[n * v + t[n] as usize] - log_sum_exp(&x[n * v..(n + 1) * v]);
    Ok(if x.len() >= PAR_MIN {
        (0..t.len()).into_par_iter().map(f).collect()
    } else {
        (0..t.len()).map(f).collect()
    })
}

fn bwd<T: Float>(x: &[T], t: &[u32], g: &[T], v: usize) -> Vec<T> {
    copied_rows_then(x, v, |n, o| {
        let lse = log_sum_exp(&x[n * v..(n + 1) * v]);
        T::exp_shifted(o, lse);
        let scale = -g[n];
        o.iter_mut().for_each(|oi| *oi *= scale);
        o[t[n] as usize] += g[n];
    })
}

impl CustomOp2 for GatherLogSoftmax {
    fn name(&self) -> &'static str {
        "quester-gather-log-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (n, v) = l1.shape().dims2()?;
        if l2.shape().dims() != [n] {
            bail!(
                "gather_log_softmax: targets {:?} for logits {:?}",
                l2.shape(),
                l1.shape()
            );
        }
        let t = contiguous::<u32>(s2, l2)?;
        let out = by_float!(s1, "gather_log_softmax", |T| fwd(
            contiguous::<T>(s1, l1)?,
            t,
            v
        )?);
        Ok((out, Shape::from(n)))
    }

    fn bwd(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let d = logits.apply_op3_no_bwd(targets, &grad.contiguous()?, &GatherLogSoftmaxBwd)?;
        Ok((Some(d), None))
    }
}

impl CustomOp3 for GatherLogSoftmaxBwd {
    fn name(&self) -> &'static str {
        "quester-gather-log-softmax-bwd"
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
        let (_, v) = l1.shape().dims2()?;
        let t = contiguous::<u32>(s2, l2)?;
        let out = by_float!(s1, "gather_log_softmax bwd", |T| bwd(
            contiguous::<T>(s1, l1)?,
            t,
            contiguous::<T>(s3, l3)?,
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
    fn equals_log_softmax_then_gather() {
        let x = Tensor::new(&[[1.0f32, 2.0, 3.0], [0.5, -1.0, 0.0]], &Device::Cpu).unwrap();
        let t = Tensor::new(&[2u32, 1], &Device::Cpu).unwrap();
        let y = gather_log_softmax(&x, &t)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let e = |v: &[f32], k: usize| v[k] - v.iter().map(|a| a.exp()).sum::<f32>().ln();
        assert!((y[0] - e(&[1.0, 2.0, 3.0], 2)).abs() < 1e-6);
        assert!((y[1] - e(&[0.5, -1.0, 0.0], 1)).abs() < 1e-6);
    }

    #[test]
    fn out_of_range_target_is_an_error() {
        let x = Tensor::zeros((1, 3), candle_core::DType::F32, &Device::Cpu).unwrap();
        let t = Tensor::new(&[3u32], &Device::Cpu).unwrap();
        assert!(gather_log_softmax(&x, &t).is_err());
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let dev = Device::Cpu;
        let x = seeded_randn_f64(1, 0.0, 2.0, (4, 9));
        let t = Tensor::new(&[0u32, 8, 3, 3], &dev).unwrap();
        let w = Tensor::new(&[1.0f64, -0.5, 2.0, 0.3], &dev).unwrap();
        check_gradients(
            &[x],
            |v| (gather_log_softmax(&v[0], &t)? * &w)?.sum_all(),
            1e-6,
        )
        .unwrap();
    }
}
