//! The target's log-probability and the distribution's entropy of each row of logits, from one
//! pass over the row: [`super::gather_log_softmax`] and [`super::softmax_entropy`] fused.
//!
//! Training asks for both on every step (the entropy is logged, and is the bonus when
//! `entropy_coef` is set). Apart, they read the [rows, vocab] logits four times with an `exp`
//! each (two forwards, and the log-prob's backward recomputing the row's log-sum-exp before its
//! own pass); here the forward makes one pass and keeps each row's log-sum-exp for the backward,
//! which makes one more. The log-probabilities are [`super::gather_log_softmax`]'s bits (the
//! same sums in the same order), so scoring without the entropy and training with it agree.

use super::reduce::{lane_dot, lane_max, lane_sum};
use super::{contiguous, copied_rows_then, Float, PAR_MIN};
use candle_core::{bail, CpuStorage, CustomOp2, CustomOp3, Layout, Result, Shape, Tensor};
use rayon::prelude::*;
use std::sync::Mutex;

/// For logits [N, V] and targets [N] (u32), returns [N, 2]: `ln softmax(logits[n])[targets[n]]`
/// and the entropy (nats) of `softmax(logits[n])`. Differentiable in `logits` through both.
pub fn gather_log_softmax_and_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    if super::portable::wanted(logits.device()) {
        let lp = super::portable::gather_log_softmax(logits, targets)?;
        let h = super::portable::softmax_entropy(logits)?;
        return Tensor::stack(&[lp, h], 1);
    }
    logits.contiguous()?.apply_op2(
        &targets.contiguous()?,
        WithEntropy {
            stats: Mutex::new(None),
        },
    )
}

/// A row's log-sum-exp and entropy, as f64 (exact for f32 and f64).
type RowStats = [f64; 2];

struct WithEntropy {
    /// Each row's [`RowStats`] from the forward, taken by the first backward; a second one
    /// recomputes them.
    stats: Mutex<Option<Vec<RowStats>>>,
}

struct WithEntropyBwd {
    stats: Option<Vec<RowStats>>,
}

/// Stack chunk for the exponentials: the rows are borrowed and the vocabulary is large.
const EXP_CHUNK: usize = 512;

/// (log-sum-exp, entropy) of one row. The log-sum-exp is `gather_log_softmax`'s to the bit:
/// the same max, chunks and per-chunk sums.
fn row_stats<T: Float>(row: &[T]) -> (T, T) {
    let m = lane_max(row);
    let mut buf = [T::zero(); EXP_CHUNK];
    let (mut s, mut sz) = (T::zero(), T::zero());
    for z in row.chunks(EXP_CHUNK) {
        let e = &mut buf[..z.len()];
        e.copy_from_slice(z);
        T::exp_shifted(e, m);
        s += lane_sum(e);
        sz += lane_dot(e, z);
    }
    let lse = m + s.ln();
    // H = lse - E_p[z]
    (lse, lse - sz / s)
}

fn fwd<T: Float>(x: &[T], t: &[u32], v: usize) -> Result<(Vec<T>, Vec<RowStats>)> {
    if let Some(&bad) = t.iter().find(|&&t| t as usize >= v) {
        bail!("gather_log_softmax_and_entropy: target {bad} out of vocabulary {v}");
    }
    let f = |n: usize| {
        let (lse, h) = row_stats(&x[n * v..(n + 1) * v]);
        (x[n * v + t[n] as usize] - lse, h, lse)
    };
    let rows: Vec<(T, T, T)> = if x.len() >= PAR_MIN {
        (0..t.len()).into_par_iter().map(f).collect()
    } else {
        (0..t.len()).map(f).collect()
    };
    let out = rows.iter().flat_map(|&(lp, h, _)| [lp, h]).collect();
    let f64_of = |x: T| candle_core::WithDType::to_f64(x);
    let stats = rows.iter().map(|r| [f64_of(r.2), f64_of(r.1)]).collect();
    Ok((out, stats))
}

/// d logits for output gradients `g` [N, 2] (log-prob, entropy): with p = softmax(z),
/// `g_lp (onehot - p) - g_h p (ln p + H)`, from the forward's row statistics (recomputed when
/// absent). A row whose entropy gradient is zero takes the log-prob's backward alone
/// (`gather_log_softmax`'s bits).
fn bwd<T: Float>(x: &[T], t: &[u32], g: &[T], stats: Option<&[RowStats]>, v: usize) -> Vec<T> {
    copied_rows_then(x, v, |n, o| {
        let row = &x[n * v..(n + 1) * v];
        let (g_lp, g_h) = (g[2 * n], g[2 * n + 1]);
        let back = <T as candle_core::WithDType>::from_f64;
        let (lse, h) = match stats {
            Some(s) => (back(s[n][0]), back(s[n][1])),
            None => row_stats(row),
        };
        T::exp_shifted(o, lse);
        if g_h == T::zero() {
            let scale = -g_lp;
            o.iter_mut().for_each(|p| *p *= scale);
        } else {
            for (p, &z) in o.iter_mut().zip(row) {
                *p = -*p * (g_lp + g_h * (z - lse + h));
            }
        }
        o[t[n] as usize] += g_lp;
    })
}

impl CustomOp2 for WithEntropy {
    fn name(&self) -> &'static str {
        "quester-gather-log-softmax-and-entropy"
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
                "gather_log_softmax_and_entropy: targets {:?} for logits {:?}",
                l2.shape(),
                l1.shape()
            );
        }
        let t = contiguous::<u32>(s2, l2)?;
        let out = by_float!(s1, "gather_log_softmax_and_entropy", |T| {
            let (out, stats) = fwd(contiguous::<T>(s1, l1)?, t, v)?;
            *self
                .stats
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(stats);
            out
        });
        Ok((out, Shape::from((n, 2))))
    }

    fn bwd(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let stats = self
            .stats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let d = logits.apply_op3_no_bwd(targets, &grad.contiguous()?, &WithEntropyBwd { stats })?;
        Ok((Some(d), None))
    }
}

impl CustomOp3 for WithEntropyBwd {
    fn name(&self) -> &'static str {
        "quester-gather-log-softmax-and-entropy-bwd"
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
        let (n, v) = l1.shape().dims2()?;
        if l3.shape().dims() != [n, 2] {
            bail!(
                "gather_log_softmax_and_entropy: gradient {:?} for {n} rows",
                l3.shape()
            );
        }
        let t = contiguous::<u32>(s2, l2)?;
        let stats = self.stats.as_deref().filter(|s| s.len() == n);
        let out = by_float!(s1, "gather_log_softmax_and_entropy bwd", |T| bwd(
            contiguous::<T>(s1, l1)?,
            t,
            contiguous::<T>(s3, l3)?,
            stats,
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
    use crate::ops::{gather_log_softmax, softmax_entropy};
    use candle_core::{DType, Device, Var};

    fn bits(t: &Tensor) -> Vec<u32> {
        let v: Vec<f32> = t.flatten_all().unwrap().to_vec1().unwrap();
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// The log-probabilities and their gradient are the separate op's bits; the entropy and its
    /// gradient match the separate op's within rounding (a vocabulary over several chunks).
    #[test]
    fn equals_the_two_separate_ops() {
        let dev = Device::Cpu;
        // Seeded: the entropy's gradient tolerance is near its rounding at some draws.
        let x = Var::from_tensor(&seeded_randn(1, 0.0, 3.0, (40, 1300))).unwrap();
        let t = Tensor::new((0..40u32).map(|i| i * 31).collect::<Vec<_>>(), &dev).unwrap();
        let both = gather_log_softmax_and_entropy(x.as_tensor(), &t).unwrap();
        let (lp, h) = (both.narrow(1, 0, 1).unwrap(), both.narrow(1, 1, 1).unwrap());
        let want_lp = gather_log_softmax(x.as_tensor(), &t).unwrap();
        let want_h = softmax_entropy(x.as_tensor()).unwrap();
        assert_eq!(bits(&lp), bits(&want_lp));
        // Their f32 sums run in another order, and H = lse - E_p[z] cancels (entropies up to
        // ln 1300 = 7.2 here; one f32 ulp of lse is about 1e-6).
        let err = crate::ops::test_util::max_abs_diff(&h.flatten_all().unwrap(), &want_h);
        assert!(err < 3e-4, "entropy differs by {err}");

        let w = seeded_randn(2, 0.0, 1.0, 40);
        // The log-prob's gradient alone: the separate op's bits.
        let g = (lp.flatten_all().unwrap() * &w)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let g_want = (want_lp * &w)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let d = |g: &candle_core::backprop::GradStore| g.get(x.as_tensor()).unwrap().clone();
        assert_eq!(bits(&d(&g)), bits(&d(&g_want)));
        // Both columns in the loss.
        let loss = |lp: &Tensor, h: &Tensor| {
            ((lp.flatten_all().unwrap() * &w).unwrap() - (h.flatten_all().unwrap() * 0.3).unwrap())
                .unwrap()
                .sum_all()
                .unwrap()
        };
        let g = loss(&lp, &h).backward().unwrap();
        let g_want = loss(&gather_log_softmax(x.as_tensor(), &t).unwrap(), &want_h)
            .backward()
            .unwrap();
        let err = crate::ops::test_util::max_abs_diff(&d(&g), &d(&g_want));
        assert!(err < 3e-5, "gradient differs by {err}");
        // A second backward of the same graph recomputes the log-sum-exp: the same bits.
        let again = loss(&lp, &h).backward().unwrap();
        assert_eq!(bits(&d(&g)), bits(&d(&again)));
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let dev = Device::Cpu;
        let x = seeded_randn_f64(1, 0.0, 2.0, (4, 9));
        let t = Tensor::new(&[0u32, 8, 3, 3], &dev).unwrap();
        let w = Tensor::new(&[[1.0f64, 0.4], [-0.5, 0.0], [2.0, -1.0], [0.3, 0.7]], &dev).unwrap();
        check_gradients(
            &[x],
            |v| (gather_log_softmax_and_entropy(&v[0], &t)? * &w)?.sum_all(),
            1e-6,
        )
        .unwrap();
    }

    #[test]
    fn out_of_range_targets_and_bad_shapes_are_errors() {
        let x = Tensor::zeros((1, 3), DType::F32, &Device::Cpu).unwrap();
        let t = Tensor::new(&[3u32], &Device::Cpu).unwrap();
        assert!(gather_log_softmax_and_entropy(&x, &t).is_err());
        let t = Tensor::new(&[0u32, 1], &Device::Cpu).unwrap();
        assert!(gather_log_softmax_and_entropy(&x, &t).is_err());
    }
}
