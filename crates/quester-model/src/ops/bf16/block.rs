//! Small bf16 products on the calling thread, for fused ops that run one product per block of
//! rows inside their own rayon task (attention's blocks, [`crate::ops::causal_attention_in`]).
//!
//! [`super::Bf16Panels`] splits each product over the pool and returns a fresh output; inside a
//! task that is the wrong shape of work. Here an operand is converted once where the op reuses
//! it (a key/value head's keys for all its query heads and blocks), a product may use a range
//! of its right operand's k (a block's keys) and columns, and it writes into the caller's rows.
//! The layouts and the loops are those of [`super::Bf16Panels`], so the kernels are the same.

use super::kernel::{panel_product, Segment};
use super::panels::{pack_panel, to_pairs, Strides, PANEL};
use super::Bf16Kernel;

/// A [m, k] as rows of bf16 pairs for one kernel (rows padded to its row step, k to its pair
/// stride, with zeros).
pub(crate) struct BlockLeft {
    m: usize,
    kp: usize,
    kernel: Bf16Kernel,
    pairs: Vec<u32>,
}

impl BlockLeft {
    /// Converts A [m, k] whose element (i, kk) is `a[i * rs + kk * cs]`; `a` must hold it.
    pub(crate) fn convert(
        kernel: Bf16Kernel,
        a: &[f32],
        (m, k): (usize, usize),
        st: Strides,
    ) -> Self {
        assert!(m == 0 || k == 0 || (m - 1) * st.0 + (k - 1) * st.1 < a.len());
        let padded = m.div_ceil(kernel.row_step()) * kernel.row_step();
        let kp = kernel.pair_stride(k);
        let pairs = to_pairs(a, (m, k), st, (padded, kp), &|_, _, _| {});
        BlockLeft {
            m,
            kp,
            kernel,
            pairs,
        }
    }
}

impl Drop for BlockLeft {
    fn drop(&mut self) {
        super::pool::give(std::mem::take(&mut self.pairs));
    }
}

/// B [n, k], used as `y = A . B^T`, packed in panels of 48 columns of pairs for one kernel.
pub(crate) struct BlockRight {
    n: usize,
    kp: usize,
    kernel: Bf16Kernel,
    data: Vec<u32>,
}

impl BlockRight {
    /// Packs B [n, k] whose element (j, kk) is `src[j * rs + kk * cs]`; `src` must hold it.
    pub(crate) fn pack(
        kernel: Bf16Kernel,
        src: &[f32],
        (n, k): (usize, usize),
        st: Strides,
    ) -> Self {
        assert!(n == 0 || k == 0 || (n - 1) * st.0 + (k - 1) * st.1 < src.len());
        let kp = kernel.pair_stride(k);
        let mut data = super::pool::take(n.div_ceil(PANEL) * kp * PANEL);
        if kp > 0 {
            for (p, panel) in data.chunks_mut(kp * PANEL).enumerate() {
                pack_panel(src, (n, k), st, p, panel);
            }
        }
        BlockRight {
            n,
            kp,
            kernel,
            data,
        }
    }

    /// y[i, c - c0] = sum over kk of A[r0 + i, kk] . B[c, k0 + kk] for rows `rows` of `a` and
    /// columns `c0..c1` of B; A's k (its pair stride) selects B's k from `k0` on. Row i of the
    /// result starts at `y[i * ys]`; nothing else of `y` is written.
    ///
    /// Panics unless `a` and B were laid out for one kernel, `rows.start` is a multiple of the
    /// kernel's row step, `c0` of 48 and `k0` even, and B holds pairs `k0 / 2` to `k0 / 2 +` A's
    /// pair stride (true when `k0` is a multiple of 32 and `k0 +` A's k is at most B's k).
    pub(crate) fn product(
        &self,
        a: &BlockLeft,
        rows: std::ops::Range<usize>,
        k0: usize,
        (c0, c1): (usize, usize),
        y: &mut [f32],
        ys: usize,
    ) {
        let (r0, m) = (rows.start, rows.len());
        let step = self.kernel.row_step();
        let q0 = k0 / 2;
        assert!(a.kernel == self.kernel && r0.is_multiple_of(step) && rows.end <= a.m);
        assert!(c0.is_multiple_of(PANEL) && c0 <= c1 && c1 <= self.n && k0.is_multiple_of(2));
        assert!(q0 + a.kp <= self.kp);
        if m == 0 || c0 == c1 {
            return;
        }
        assert!((m - 1) * ys + (c1 - c0) <= y.len());
        if a.kp == 0 {
            for row in y.chunks_mut(ys).take(m) {
                row[..c1 - c0].fill(0.0);
            }
            return;
        }
        let end = (r0 + m).div_ceil(step) * step;
        for p in c0 / PANEL..c1.div_ceil(PANEL) {
            let start = p * self.kp * PANEL + q0 * PANEL;
            let seg = Segment {
                a: &a.pairs[r0 * a.kp..end * a.kp],
                kp: a.kp,
                panel: &self.data[start..start + a.kp * PANEL],
            };
            let cols = (c1 - p * PANEL).min(PANEL);
            // SAFETY: both operands were laid out for this kernel, which is available (it was
            // asked for by name when they were made, and `to_pairs` / `pack_panel` only lay
            // out); A's rows r0..end exist (padded to the row step) with `kp` > 0 pairs each,
            // the panel slice holds kp * 48 pairs (asserted above), and y holds `m` rows of
            // stride `ys` with `cols` columns from this panel's first (asserted above).
            unsafe {
                panel_product(
                    self.kernel,
                    m,
                    std::slice::from_ref(&seg),
                    (y.as_mut_ptr().add(p * PANEL - c0), ys, cols),
                );
            };
        }
    }
}

impl Drop for BlockRight {
    fn drop(&mut self) {
        super::pool::give(std::mem::take(&mut self.data));
    }
}

#[cfg(test)]
mod tests {
    use super::super::round_to_bf16;
    use super::*;

    fn data(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((((i * 7919 + seed * 104729) % 2003) as f32 / 2003.0) - 0.5) * 3.0)
            .collect()
    }

    /// Sub-ranges of rows, k and columns, transposed operands, on every kernel here: each
    /// element against the product of the bf16-rounded operands summed in f64.
    #[test]
    fn products_on_ranges_match_the_rounded_reference() {
        let r = |x: f32| f64::from(round_to_bf16(x));
        let (m, k, n) = (37, 150, 100);
        // A stored transposed ([k, m]), B row-major [n, k].
        let a = data(m * k, 1);
        let b = data(n * k, 2);
        for kernel in Bf16Kernel::ALL.into_iter().filter(|k| k.available()) {
            let bp = BlockRight::pack(kernel, &b, (n, k), (k, 1));
            for (rows, k0, kn, (c0, c1)) in [
                (0..m, 0, k, (0, n)),
                (16..m, 32, 100, (48, 97)),
                (0..5, 64, 86, (96, 100)),
            ] {
                // A's columns k0..k0+kn, read through the transposed strides.
                let al = BlockLeft::convert(kernel, &a[k0 * m..], (m, kn), (1, m));
                let ys = c1 - c0 + 3;
                let mut y = vec![f32::NAN; rows.len() * ys];
                bp.product(&al, rows.clone(), k0, (c0, c1), &mut y, ys);
                for (i, row) in rows.clone().enumerate() {
                    for c in c0..c1 {
                        let want: f64 = (0..kn)
                            .map(|kk| r(a[(k0 + kk) * m + row]) * r(b[c * k + k0 + kk]))
                            .sum();
                        let got = f64::from(y[i * ys + c - c0]);
                        assert!(
                            (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                            "{} [{row}, {c}]: {got} vs {want}",
                            kernel.name()
                        );
                    }
                    // Past the columns asked for, nothing is written.
                    assert!(y[i * ys + c1 - c0..(i + 1) * ys].iter().all(|x| x.is_nan()));
                }
            }
        }
    }
}
