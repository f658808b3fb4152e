//! A left-hand matrix converted to bf16 pairs once, for products against
//! [`super::Bf16Panels`].
//!
//! A product converts its left operand itself; converting it beforehand lets the caller read
//! each block of rows once for more than the conversion: a LoRA projection's rank-r products
//! run on the block while it is in cache instead of reading the whole activation or gradient
//! again from memory (those passes were bound by reading it, not by their arithmetic).

use super::panels::{to_pairs, CHUNK_ROWS};
use super::Bf16Kernel;
use candle_core::{bail, Result};

/// A [m, k] as bf16 pairs laid out for one kernel (rows padded to its row step).
#[derive(Debug)]
pub struct Bf16Rows {
    m: usize,
    k: usize,
    kernel: Bf16Kernel,
    pairs: Vec<u32>,
}

impl Bf16Rows {
    /// Rows of A in each block [`Self::convert_then`] hands to its hook (the last one may be
    /// shorter).
    pub const BLOCK: usize = CHUNK_ROWS;

    /// Converts a row-major A [m, k] for products against panels packed for `kernel`.
    pub fn convert(kernel: Bf16Kernel, a: &[f32], m: usize, k: usize) -> Result<Self> {
        Self::convert_then(kernel, a, (m, k), |_, _, _| {})
    }

    /// [`Self::convert`], running `then(i0, rows, block)` on each block of [`Self::BLOCK`] rows
    /// (rows `i0..i0 + rows`) right after it is converted, on the same thread, while those rows
    /// of A and their pairs (`block`, for [`super::Bf16Panels::product_block`]) are in cache. Blocks run in parallel; which thread runs which is unspecified, but the
    /// blocks themselves are fixed by m alone.
    pub fn convert_then(
        kernel: Bf16Kernel,
        a: &[f32],
        (m, k): (usize, usize),
        then: impl Fn(usize, usize, RowBlock<'_>) + Sync,
    ) -> Result<Self> {
        if !kernel.available() {
            bail!(
                "bf16 matmul: the {} kernel does not run on this CPU",
                kernel.name()
            );
        }
        if a.len() != m * k {
            bail!("bf16 matmul: {} values for a [{m}, {k}] matrix", a.len());
        }
        let padded = m.div_ceil(kernel.row_step()) * kernel.row_step();
        let kp = kernel.pair_stride(k);
        let hook =
            |i0: usize, rows: usize, pairs: &[u32]| then(i0, rows, RowBlock { pairs, k, kernel });
        let pairs = to_pairs(a, (m, k), (k, 1), (padded, kp), &hook);
        Ok(Bf16Rows {
            m,
            k,
            kernel,
            pairs,
        })
    }

    /// Rows.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Columns (the products' k).
    pub fn k(&self) -> usize {
        self.k
    }

    /// The kernel the pairs are laid out for.
    pub fn kernel(&self) -> Bf16Kernel {
        self.kernel
    }

    pub(super) fn pairs(&self) -> &[u32] {
        &self.pairs
    }
}

/// One block of rows just converted by [`Bf16Rows::convert_then`], as its hook gets it.
#[derive(Clone, Copy)]
pub struct RowBlock<'a> {
    pub(super) pairs: &'a [u32],
    pub(super) k: usize,
    pub(super) kernel: Bf16Kernel,
}

impl Drop for Bf16Rows {
    fn drop(&mut self) {
        super::pool::give(std::mem::take(&mut self.pairs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::bf16::Bf16Panels;
    use std::sync::Mutex;

    fn data(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0) * 1.7)
            .collect()
    }

    #[test]
    fn converted_rows_give_the_bits_of_a_product_that_converts_itself() {
        for kernel in Bf16Kernel::ALL.into_iter().filter(|k| k.available()) {
            // Ragged: rows past one block and not a multiple of any row step, odd k.
            for (m, k, n, k2) in [(150, 77, 53, 16), (3, 40, 96, 5), (64, 33, 7, 1)] {
                let (a, w) = (data(m * k, 1), data(n * k, 2));
                let (a2, w2) = (data(m * k2, 3), data(n * k2, 4));
                let b = Bf16Panels::pack_for(kernel, &w, (n, k), (k, 1)).unwrap();
                let b2 = Bf16Panels::pack_for(kernel, &w2, (n, k2), (k2, 1)).unwrap();
                let rows = Bf16Rows::convert(kernel, &a, m, k).unwrap();
                let rows2 = Bf16Rows::convert(kernel, &a2, m, k2).unwrap();
                assert_eq!(
                    b.matmul_rows(&rows, None).unwrap(),
                    b.matmul(&a, m).unwrap(),
                    "{kernel:?} {m}x{k}x{n}"
                );
                assert_eq!(
                    b.matmul_rows(&rows, Some((&b2, &rows2))).unwrap(),
                    b.matmul_plus(&a, m, (&b2, &a2)).unwrap(),
                    "{kernel:?} {m}x{k}x{n} + {k2}"
                );
            }
        }
    }

    #[test]
    fn the_hook_sees_every_row_once_in_fixed_blocks() {
        let kernel = Bf16Kernel::best();
        for m in [0, 1, 63, 64, 65, 700] {
            let seen = Mutex::new(Vec::new());
            let a = data(m * 300, 5);
            Bf16Rows::convert_then(kernel, &a, (m, 300), |i0, rows, _| {
                seen.lock().unwrap().push((i0, rows));
            })
            .unwrap();
            let mut seen = seen.into_inner().unwrap();
            seen.sort_unstable();
            let want: Vec<(usize, usize)> = (0..m)
                .step_by(Bf16Rows::BLOCK)
                .map(|i0| (i0, (m - i0).min(Bf16Rows::BLOCK)))
                .collect();
            assert_eq!(seen, want, "m = {m}");
        }
    }

    #[test]
    fn mismatched_operands_are_errors() {
        let kernel = Bf16Kernel::best();
        let b = Bf16Panels::pack_for(kernel, &data(8 * 32, 1), (8, 32), (32, 1)).unwrap();
        let wrong_k = Bf16Rows::convert(kernel, &data(4 * 31, 2), 4, 31).unwrap();
        assert!(b.matmul_rows(&wrong_k, None).is_err());
        let rows = Bf16Rows::convert(kernel, &data(4 * 32, 2), 4, 32).unwrap();
        let rows2 = Bf16Rows::convert(kernel, &data(5 * 32, 3), 5, 32).unwrap();
        assert!(b.matmul_rows(&rows, Some((&b, &rows2))).is_err());
        let other = Bf16Panels::pack_for(kernel, &data(9 * 32, 1), (9, 32), (32, 1)).unwrap();
        assert!(b.matmul_rows(&rows, Some((&other, &rows))).is_err());
        assert!(Bf16Rows::convert(kernel, &data(10, 1), 4, 32).is_err());
        if let Some(k) = Bf16Kernel::ALL
            .into_iter()
            .find(|k| k.available() && *k != kernel)
        {
            let elsewhere = Bf16Rows::convert(k, &data(4 * 32, 2), 4, 32).unwrap();
            assert!(b.matmul_rows(&elsewhere, None).is_err());
        }
    }
}
