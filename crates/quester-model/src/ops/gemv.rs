//! `x W^T` for a few rows (decoding: one row per live sequence) without packing W.
//!
//! A general gemm copies (packs) the whole right-hand matrix into its blocked layout on every
//! call; with a handful of rows that copy costs more than the product, and decoding does it for
//! every weight at every token. Here each task walks a range of W's rows once, straight from
//! memory, and takes the dot product with every x row while that W row sits in L1: the weights
//! are read exactly once per step, which is the bound for decoding.

use super::Float;
use rayon::prelude::*;

/// Up to this many rows the dot-product path is used; above it gemm's blocking wins.
pub(crate) const MAX_ROWS: usize = 16;

/// Output columns per parallel task.
const COLS_PER_TASK: usize = 64;

/// y [rows, out] = x [rows, inp] . W^T with W [out, inp] row-major.
pub(crate) fn small_rows_matmul<T: Float>(
    x: &[T],
    w: &[T],
    rows: usize,
    inp: usize,
    out: usize,
) -> Vec<T> {
    // Tasks write y transposed ([out, rows]) so each owns a contiguous chunk; transposed back
    // at the end (rows * out elements: negligible next to reading W).
    let mut yt = vec![T::zero(); out * rows];
    let body = |(task, chunk): (usize, &mut [T])| {
        for (jj, col) in chunk.chunks_mut(rows).enumerate() {
            let j = task * COLS_PER_TASK + jj;
            let wj = &w[j * inp..(j + 1) * inp];
            for (r, y) in col.iter_mut().enumerate() {
                *y = T::dot(&x[r * inp..(r + 1) * inp], wj);
            }
        }
    };
    if out * inp * rows >= 1 << 15 {
        yt.par_chunks_mut(rows * COLS_PER_TASK)
            .enumerate()
            .for_each(body);
    } else {
        yt.chunks_mut(rows * COLS_PER_TASK)
            .enumerate()
            .for_each(body);
    }
    let mut y = vec![T::zero(); rows * out];
    for j in 0..out {
        for r in 0..rows {
            y[r * out + j] = yt[j * rows + r];
        }
    }
    y
}

/// Dot products, vectorised where the CPU allows.
pub(crate) trait Dot: Sized {
    fn dot(a: &[Self], b: &[Self]) -> Self;
}

impl Dot for f64 {
    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }
}

impl Dot for f32 {
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                // SAFETY: the CPU supports the features the function is compiled for.
                return unsafe { dot_avx2(a, b) };
            }
        }
        dot_portable(a, b)
    }
}

/// Eight independent partial sums so the compiler can keep them in vector lanes.
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    // SAFETY: the caller checked AVX2 and FMA at run time (`Dot for f32`). Every load reads 8
    // floats at i + 8k with i + 32 <= n or i + 8 <= n, and the scalar tail reads i < n,
    // where n is the shorter slice's length; the store writes the 8 floats of `lanes`.
    unsafe {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (k, s) in acc.iter_mut().enumerate() {
                let x = _mm256_loadu_ps(pa.add(i + 8 * k));
                let y = _mm256_loadu_ps(pb.add(i + 8 * k));
                *s = _mm256_fmadd_ps(x, y, *s);
            }
            i += 32;
        }
        while i + 8 <= n {
            let x = _mm256_loadu_ps(pa.add(i));
            let y = _mm256_loadu_ps(pb.add(i));
            acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
            i += 8;
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), s);
        let mut total: f32 = lanes.iter().sum();
        while i < n {
            total += *pa.add(i) * *pb.add(i);
            i += 1;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_naive_product_for_ragged_sizes() {
        for &(rows, inp, out) in &[(1usize, 576usize, 130usize), (5, 37, 3), (16, 1536, 65)] {
            let x: Vec<f32> = (0..rows * inp)
                .map(|i| ((i * 7) % 13) as f32 - 6.0)
                .collect();
            let w: Vec<f32> = (0..out * inp)
                .map(|i| ((i * 5) % 11) as f32 * 0.1)
                .collect();
            let y = small_rows_matmul(&x, &w, rows, inp, out);
            crate::ops::test_util::assert_x_wt(&y, &x, &w, (rows, inp, out), 1e-3);
        }
    }

    #[test]
    fn portable_and_vector_dots_agree() {
        let a: Vec<f32> = (0..1001).map(|i| (i as f32).sin()).collect();
        let b: Vec<f32> = (0..1001).map(|i| (i as f32 * 0.3).cos()).collect();
        let (p, v) = (dot_portable(&a, &b), f32::dot(&a, &b));
        assert!((p - v).abs() < 1e-3, "{p} {v}");
    }
}
