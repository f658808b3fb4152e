//! The keys (or values) each row of a shared-prefix batch attends: the one prefix, then the
//! row's own suffix, gathered from the batch's token rows in one pass.
//!
//! A GRPO group's completions share their prompt, which the shared-prefix forward runs once, as
//! token rows [P + B*S] (the prefix's P, then each row's S). The suffix queries of row b need
//! keys [prefix; suffix b] laid out heads first. Built from candle ops (transpose and copy the
//! prefix and the suffixes, broadcast the prefix to B rows, concatenate) that was three copies
//! forward, and backward a sum of the prefix's B gradients on one thread (candle's strided
//! `sum_keepdim`, 2% of a GRPO-shaped LoRA step) plus the concatenation's copies. Here both
//! directions are one parallel pass.

use super::{contiguous, Float};
use candle_core::{bail, CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// `k` [1, P + B*S, H, D] (token rows: the prefix, then B suffixes of S rows) to
/// [B, H, P + S, D]: for each row b and head h, the prefix's P rows then suffix b's S rows.
/// Differentiable in `k` (the prefix's gradient is the sum over the B rows).
pub fn keys_with_prefix(k: &Tensor, p: usize, b: usize) -> Result<Tensor> {
    let (one, n, h, d) = k.dims4()?;
    if one != 1 || b == 0 || n < p || !(n - p).is_multiple_of(b) {
        bail!(
            "keys_with_prefix: {:?} is not one batch of {p} prefix rows and {b} equal suffixes",
            k.dims()
        );
    }
    let s = (n - p) / b;
    if super::portable::wanted(k.device()) {
        let prefix = k.narrow(1, 0, p)?.transpose(1, 2)?;
        let suffix = k
            .narrow(1, p, b * s)?
            .reshape((b, s, h, d))?
            .transpose(1, 2)?;
        return Tensor::cat(&[prefix.broadcast_as((b, h, p, d))?, suffix], 2)?.contiguous();
    }
    k.contiguous()?.apply_op1(Gather { p, b, s })
}

/// The forward gather (`p` prefix rows, `b` suffixes of `s` rows).
struct Gather {
    p: usize,
    b: usize,
    s: usize,
}

/// Its backward: [B, H, P + S, D] gradients back to token rows [1, P + B*S, H, D].
struct Scatter {
    p: usize,
    b: usize,
    s: usize,
}

/// Token row of position `j` of batch row `bi` (prefix first).
fn token_row(j: usize, bi: usize, (p, s): (usize, usize)) -> usize {
    if j < p {
        j
    } else {
        p + bi * s + (j - p)
    }
}

fn gather<T: Float>(k: &[T], (p, b, s): (usize, usize, usize), (h, d): (usize, usize)) -> Vec<T> {
    let (rows, len) = (p + s, b * h * (p + s) * d);
    let mut out = Vec::with_capacity(len);
    if len == 0 {
        return out;
    }
    // One task per (batch row, head): its [P + S, D] block, read row by row from the tokens,
    // written once into uninitialised memory (a zeroed output would be one more pass).
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(rows * d)
        .enumerate()
        .for_each(|(bh, o)| {
            let (bi, hi) = (bh / h, bh % h);
            for (j, dst) in o.chunks_exact_mut(d).enumerate() {
                let src = (token_row(j, bi, (p, s)) * h + hi) * d;
                dst.write_copy_of_slice(&k[src..src + d]);
            }
        });
    // SAFETY: the blocks cover all `len` elements and each task wrote every row of its block.
    unsafe { out.set_len(len) };
    out
}

fn scatter<T: Float>(g: &[T], (p, b, s): (usize, usize, usize), (h, d): (usize, usize)) -> Vec<T> {
    let (rows, len) = (p + s, (p + b * s) * h * d);
    let mut dk = Vec::with_capacity(len);
    if len == 0 {
        return dk;
    }
    let at = |bi: usize, hi: usize, j: usize| ((bi * h + hi) * rows + j) * d;
    // One task per token row: a prefix row sums its B gradients (in batch order), a suffix row
    // is its one row's.
    dk.spare_capacity_mut()[..len]
        .par_chunks_mut(h * d)
        .enumerate()
        .for_each(|(t, o)| {
            for (hi, dst) in o.chunks_exact_mut(d).enumerate() {
                if t < p {
                    let sum = dst.write_copy_of_slice(&g[at(0, hi, t)..at(0, hi, t) + d]);
                    for bi in 1..b {
                        let src = &g[at(bi, hi, t)..at(bi, hi, t) + d];
                        sum.iter_mut().zip(src).for_each(|(a, &v)| *a += v);
                    }
                } else {
                    let (bi, j) = ((t - p) / s, p + (t - p) % s);
                    dst.write_copy_of_slice(&g[at(bi, hi, j)..at(bi, hi, j) + d]);
                }
            }
        });
    // SAFETY: the token rows cover all `len` elements and each task wrote every head of its row.
    unsafe { dk.set_len(len) };
    dk
}

impl CustomOp1 for Gather {
    fn name(&self) -> &'static str {
        "quester-keys-with-prefix"
    }

    fn cpu_fwd(&self, st: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (_, _, h, d) = l.shape().dims4()?;
        let dims = (self.p, self.b, self.s);
        let out = by_float!(st, "keys_with_prefix", |T| gather(
            contiguous::<T>(st, l)?,
            dims,
            (h, d)
        ));
        Ok((out, Shape::from((self.b, h, self.p + self.s, d))))
    }

    fn bwd(&self, k: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let (_, _, h, d) = k.dims4()?;
        if grad.dims() != [self.b, h, self.p + self.s, d] {
            bail!("keys_with_prefix: gradient {:?}", grad.dims());
        }
        let dk = grad.contiguous()?.apply_op1_no_bwd(&Scatter {
            p: self.p,
            b: self.b,
            s: self.s,
        })?;
        Ok(Some(dk))
    }
}

impl CustomOp1 for Scatter {
    fn name(&self) -> &'static str {
        "quester-keys-with-prefix-bwd"
    }

    fn cpu_fwd(&self, st: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (_, h, _, d) = l.shape().dims4()?;
        let dims = (self.p, self.b, self.s);
        let out = by_float!(st, "keys_with_prefix backward", |T| scatter(
            contiguous::<T>(st, l)?,
            dims,
            (h, d)
        ));
        Ok((out, Shape::from((1, self.p + self.b * self.s, h, d))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::check_gradients;
    use crate::ops::test_util::*;
    use candle_core::{DType, Device};

    /// The candle-op form it replaces (the portable path's).
    fn reference(k: &Tensor, p: usize, b: usize) -> Tensor {
        let (_, n, h, d) = k.dims4().unwrap();
        let s = (n - p) / b;
        let prefix = k.narrow(1, 0, p).unwrap().transpose(1, 2).unwrap();
        let suffix = k
            .narrow(1, p, b * s)
            .unwrap()
            .reshape((b, s, h, d))
            .unwrap()
            .transpose(1, 2)
            .unwrap();
        Tensor::cat(&[prefix.broadcast_as((b, h, p, d)).unwrap(), suffix], 2).unwrap()
    }

    #[test]
    fn gathers_the_prefix_then_each_rows_suffix() {
        // p 3, b 2, s 2, 2 heads of 4.
        let k = seeded_randn(1, 0.0, 1.0, (1, 7, 2, 4));
        let got = keys_with_prefix(&k, 3, 2).unwrap();
        assert_eq!(got.dims(), [2, 2, 5, 4]);
        let d = crate::ops::test_util::max_abs_diff(&got, &reference(&k, 3, 2));
        assert_eq!(d, 0.0);
    }

    #[test]
    fn gradients_match_finite_differences() {
        // The prefix's gradient sums over the rows; p 0 (no prefix) and one row too.
        for (p, b, s) in [(3usize, 3usize, 2usize), (0, 2, 3), (4, 1, 2)] {
            let k = seeded_randn_f64(2, 0.0, 1.0, (1, p + b * s, 2, 3));
            let proj = seeded_randn_f64(3, 0.0, 1.0, (b, 2, p + s, 3));
            check_gradients(
                &[k],
                |x| (keys_with_prefix(&x[0], p, b)? * &proj)?.sum_all(),
                1e-6,
            )
            .unwrap_or_else(|e| panic!("p {p} b {b} s {s}: {e}"));
        }
    }

    #[test]
    fn rows_that_do_not_split_evenly_are_errors() {
        let k = Tensor::zeros((1, 8, 2, 4), DType::F32, &Device::Cpu).unwrap();
        assert!(keys_with_prefix(&k, 3, 2).is_err());
        assert!(keys_with_prefix(&k, 9, 1).is_err());
        assert!(keys_with_prefix(&k, 2, 0).is_err());
        let k2 = Tensor::zeros((2, 8, 2, 4), DType::F32, &Device::Cpu).unwrap();
        assert!(keys_with_prefix(&k2, 2, 3).is_err());
    }
}
