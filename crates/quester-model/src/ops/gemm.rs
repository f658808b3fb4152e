//! A bounds-checked, safe wrapper over the `gemm` crate (the kernel candle's matmul uses) for
//! the fused ops, which multiply blocks of plain slices.

use super::Float;
use gemm::Parallelism;

/// dst (row-major, row stride `dst_rs`) := [dst +] lhs x rhs, with lhs [m, k] and rhs [k, n]
/// given by their (row, column) strides. Single-threaded: the callers parallelise over blocks.
#[allow(clippy::too_many_arguments)]
pub(crate) fn mm<T: Float>(
    mnk: (usize, usize, usize),
    dst: &mut [T],
    dst_rs: usize,
    accumulate: bool,
    lhs: &[T],
    lhs_strides: (usize, usize),
    rhs: &[T],
    rhs_strides: (usize, usize),
) {
    mm_scaled(
        mnk,
        dst,
        dst_rs,
        accumulate,
        T::one(),
        (lhs, lhs_strides),
        (rhs, rhs_strides),
        false,
    );
}

/// dst := [dst +] scale * lhs x rhs; `parallel` lets gemm use every rayon thread (for one big
/// product issued from the calling thread).
#[allow(clippy::too_many_arguments)]
pub(crate) fn mm_scaled<T: Float>(
    (m, n, k): (usize, usize, usize),
    dst: &mut [T],
    dst_rs: usize,
    accumulate: bool,
    scale: T,
    (lhs, (lhs_rs, lhs_cs)): (&[T], (usize, usize)),
    (rhs, (rhs_rs, rhs_cs)): (&[T], (usize, usize)),
    parallel: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    let last = |rs: usize, cs: usize, r: usize, c: usize| (r - 1) * rs + (c - 1) * cs;
    // The bounds gemm would touch, checked once: the pointer arithmetic below is then in range.
    assert!(last(dst_rs, 1, m, n) < dst.len());
    if k > 0 {
        assert!(last(lhs_rs, lhs_cs, m, k) < lhs.len());
        assert!(last(rhs_rs, rhs_cs, k, n) < rhs.len());
    }
    let threads = rayon::current_num_threads();
    let par = if parallel && threads > 1 && m * n * k > 1 << 15 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    // SAFETY: every index gemm reads or writes lies inside the slices (checked above), and dst
    // does not alias lhs or rhs (distinct borrows).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_rs as isize,
            accumulate,
            lhs.as_ptr(),
            lhs_cs as isize,
            lhs_rs as isize,
            rhs.as_ptr(),
            rhs_cs as isize,
            rhs_rs as isize,
            T::one(),
            scale,
            false,
            false,
            false,
            par,
        );
    }
}

/// A new row-major [m, n] = scale * lhs x rhs, multi-threaded (one big product issued from the
/// calling thread); lhs [m, k] and rhs [k, n] given by their (row, column) strides.
pub(crate) fn product<T: Float>(
    (m, n, k): (usize, usize, usize),
    scale: T,
    lhs: (&[T], (usize, usize)),
    rhs: (&[T], (usize, usize)),
) -> Vec<T> {
    let mut out = vec![T::zero(); m * n];
    if k > 0 {
        mm_scaled((m, n, k), &mut out, n, false, scale, lhs, rhs, true);
    }
    out
}
