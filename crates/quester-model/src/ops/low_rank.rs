//! The rank-r products of a LoRA adapter: a tall matrix times an r-column factor, an r-column
//! factor times a wide matrix, and the r-column reduction over rows that gives the factors'
//! gradients.
//!
//! gemm packs both operands into its blocked layout on every call and blocks for large square
//! shapes; with r = 16 one side is a single AVX-512 register per row, and on the GRPO-shaped
//! LoRA step (704 rows, r = 16, 2 threads) these products ran at 15-25 GFLOP/s through gemm,
//! a tenth of the CPU's f32 rate, for a tenth of the adapter step's time. For f32 with AVX-512
//! and r a multiple of 16 they are written here around that register: each 16-lane slice of a
//! factor row is loaded once and multiplied by broadcast values of the other operand, read
//! straight from memory (no packing). Other types, ranks and CPUs use gemm.

use super::gemm::{mm_scaled, product};
use super::Float;
use rayon::prelude::*;

/// Element types with the low-rank products (f32 and f64; public for `bench_matmul`).
pub trait LowRank: Sized {
    /// `[rows, r] = x [rows, k] . m [k, r]`.
    fn x_m(x: &[Self], m: &[Self], rows: usize, k: usize, r: usize) -> Vec<Self>;
    /// `out [rows, n] += scale * u [rows, r] . m [r, n]`.
    fn acc_u_m(out: &mut [Self], u: &[Self], m: &[Self], rows: usize, r: usize, scale: Self);
    /// `[n, r] = scale * x^T . v` for `x [rows, n]` and `v [rows, r]`.
    fn xt_v(x: &[Self], v: &[Self], rows: usize, n: usize, r: usize, scale: Self) -> Vec<Self>;
}

fn gemm_x_m<T: Float>(x: &[T], m: &[T], rows: usize, k: usize, r: usize) -> Vec<T> {
    product((rows, r, k), T::one(), (x, (k, 1)), (m, (r, 1)))
}

fn gemm_acc_u_m<T: Float>(out: &mut [T], u: &[T], m: &[T], rows: usize, r: usize, scale: T) {
    let n = out.len() / rows.max(1);
    mm_scaled(
        (rows, n, r),
        out,
        n,
        true,
        scale,
        (u, (r, 1)),
        (m, (n, 1)),
        true,
    );
}

fn gemm_xt_v<T: Float>(x: &[T], v: &[T], rows: usize, n: usize, r: usize, scale: T) -> Vec<T> {
    product((n, r, rows), scale, (x, (1, n)), (v, (r, 1)))
}

impl LowRank for f64 {
    fn x_m(x: &[f64], m: &[f64], rows: usize, k: usize, r: usize) -> Vec<f64> {
        gemm_x_m(x, m, rows, k, r)
    }
    fn acc_u_m(out: &mut [f64], u: &[f64], m: &[f64], rows: usize, r: usize, scale: f64) {
        gemm_acc_u_m(out, u, m, rows, r, scale);
    }
    fn xt_v(x: &[f64], v: &[f64], rows: usize, n: usize, r: usize, scale: f64) -> Vec<f64> {
        gemm_xt_v(x, v, rows, n, r, scale)
    }
}

/// Whether the AVX-512 kernels run for rank `r`.
fn fast(r: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        r > 0 && r.is_multiple_of(16) && std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = r;
        false
    }
}

/// Work (multiply-adds) below which a product stays on the calling thread.
const PAR_WORK: usize = 1 << 16;

impl LowRank for f32 {
    fn x_m(x: &[f32], m: &[f32], rows: usize, k: usize, r: usize) -> Vec<f32> {
        assert!(x.len() == rows * k && m.len() == k * r, "x_m: shapes");
        if !fast(r) || rows == 0 {
            return gemm_x_m(x, m, rows, k, r);
        }
        let mut out = vec![0f32; rows * r];
        let body = |(blk, o): (usize, &mut [f32])| {
            let i0 = blk * avx512::X_M_ROWS;
            let n = o.len() / r;
            // SAFETY: AVX-512F is present (`fast`); the slices hold rows i0..i0+n of x and of
            // the output, and all of m (asserted above).
            unsafe { avx512::x_m(&x[i0 * k..(i0 + n) * k], m, o, n, k, r) }
        };
        let chunk = avx512::X_M_ROWS * r;
        if rows * k * r >= PAR_WORK {
            out.par_chunks_mut(chunk).enumerate().for_each(body);
        } else {
            out.chunks_mut(chunk).enumerate().for_each(body);
        }
        out
    }

    fn acc_u_m(out: &mut [f32], u: &[f32], m: &[f32], rows: usize, r: usize, scale: f32) {
        let n = out.len() / rows.max(1);
        if rows == 0 || n == 0 {
            return;
        }
        assert!(
            out.len() == rows * n && u.len() == rows * r && m.len() == r * n,
            "acc_u_m: shapes"
        );
        if !fast(r) {
            return gemm_acc_u_m(out, u, m, rows, r, scale);
        }
        let body = |(blk, o): (usize, &mut [f32])| {
            let i0 = blk * avx512::ACC_ROWS;
            let nr = o.len() / n;
            // SAFETY: AVX-512F is present; u's rows i0..i0+nr and all of m are in range.
            unsafe { avx512::acc_u_m(o, &u[i0 * r..(i0 + nr) * r], m, nr, r, n, scale) }
        };
        let chunk = avx512::ACC_ROWS * n;
        if rows * n * r >= PAR_WORK {
            out.par_chunks_mut(chunk).enumerate().for_each(body);
        } else {
            out.chunks_mut(chunk).enumerate().for_each(body);
        }
    }

    fn xt_v(x: &[f32], v: &[f32], rows: usize, n: usize, r: usize, scale: f32) -> Vec<f32> {
        assert!(x.len() == rows * n && v.len() == rows * r, "xt_v: shapes");
        if !fast(r) || n == 0 {
            return gemm_xt_v(x, v, rows, n, r, scale);
        }
        let mut out = vec![0f32; n * r];
        let body = |(blk, o): (usize, &mut [f32])| {
            let c0 = blk * avx512::XT_COLS;
            let nc = o.len() / r;
            // SAFETY: AVX-512F is present; columns c0..c0+nc of x's rows are in range.
            unsafe { avx512::xt_v(x, v, o, (c0, nc), rows, n, r, scale) }
        };
        let chunk = avx512::XT_COLS * r;
        if rows * n * r >= PAR_WORK {
            out.par_chunks_mut(chunk).enumerate().for_each(body);
        } else {
            out.chunks_mut(chunk).enumerate().for_each(body);
        }
        out
    }
}

/// `o [m, n] = lhs [m, k] . rhs [k, n]` (operands given by their strides) on the calling
/// thread, every element of o written.
fn block_product(
    (m, n, k): (usize, usize, usize),
    o: &mut [f32],
    lhs: (&[f32], (usize, usize)),
    rhs: (&[f32], (usize, usize)),
) {
    if k == 0 {
        o.fill(0.0);
    } else {
        mm_scaled((m, n, k), o, n, false, 1.0, lhs, rhs, false);
    }
}

/// `o [r, n] = v^T . x` for `x [rows, n]` and `v [rows, r]` on the calling thread, for a block
/// of rows a caller already holds in cache (see `ops::lora_bf16`): the transpose of `x^T v`, laid out as a LoRA factor's gradient is (A's
/// [r, in]). Every element of o is written.
pub(crate) fn vt_x_block(x: &[f32], v: &[f32], o: &mut [f32], rows: usize, n: usize, r: usize) {
    assert!(
        x.len() >= rows * n && v.len() >= rows * r && o.len() == n * r,
        "vt_x_block: shapes"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if r.is_multiple_of(avx512::VT_ROWS) && std::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F is present; rows x n of x, rows x r of v and r x n of o are in
            // range (asserted above).
            unsafe { avx512::vt_x(x, v, o, rows, n, r) };
            return;
        }
    }
    // v^T [r, rows] (element (j, i) at v[i * r + j]) times x [rows, n].
    block_product((r, n, rows), o, (v, (1, r)), (x, (n, 1)));
}

/// `[cols, rows]` from a row-major `[rows, cols]`.
pub(crate) fn transpose<T: Copy>(m: &[T], rows: usize, cols: usize) -> Vec<T> {
    assert_eq!(m.len(), rows * cols, "transpose: shape");
    // Index loops over a buffer of the right length (the iterator chains tried before did not
    // compile to a tight loop: 4% of decoding with an adapter, which transposes A at every
    // projection).
    let mut out = m.to_vec();
    if rows == 0 {
        return out;
    }
    for (c, dst) in out.chunks_exact_mut(rows).enumerate() {
        for (i, d) in dst.iter_mut().enumerate() {
            *d = m[i * cols + c];
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// Rows per task of `x_m` (8 accumulators per 16 lanes of r).
    pub(super) const X_M_ROWS: usize = 64;
    /// Rows per task of `acc_u_m`.
    pub(super) const ACC_ROWS: usize = 16;
    /// Columns of x per task of `xt_v` (the task's rows of o, 8 KiB per 16 of r, stay in L2).
    pub(super) const XT_COLS: usize = 128;

    /// o [n, r] = x [n, k] . m [k, r], eight rows at a time.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn x_m(x: &[f32], m: &[f32], o: &mut [f32], n: usize, k: usize, r: usize) {
        // SAFETY: AVX-512F, x of n rows of k, m of k x r with r a multiple of 16, and o of n rows
        // of r, as `LowRank::x_m` checks before calling; x_m_rows gets rows i..i + 8 <= n
        // or i < n.
        unsafe {
            let mut i = 0;
            while i + 8 <= n {
                x_m_rows::<8>(x, m, o, i, k, r);
                i += 8;
            }
            while i < n {
                x_m_rows::<1>(x, m, o, i, k, r);
                i += 1;
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn x_m_rows<const N: usize>(
        x: &[f32],
        m: &[f32],
        o: &mut [f32],
        i: usize,
        k: usize,
        r: usize,
    ) {
        // SAFETY: AVX-512F and the shapes `x_m` was called with, and rows i..i + N <= n: m is read
        // at kk * r + j0 + 16 <= k * r (j0 steps by 16 below r, a multiple of 16), x at (i
        // + t) * k + kk < n * k, o written at (i + t) * r + j0 + 16 <= n * r.
        unsafe {
            for j0 in (0..r).step_by(16) {
                let mut acc = [_mm512_setzero_ps(); N];
                for kk in 0..k {
                    let mv = _mm512_loadu_ps(m.as_ptr().add(kk * r + j0));
                    for (t, a) in acc.iter_mut().enumerate() {
                        let xv = _mm512_set1_ps(*x.get_unchecked((i + t) * k + kk));
                        *a = _mm512_fmadd_ps(xv, mv, *a);
                    }
                }
                for (t, a) in acc.iter().enumerate() {
                    _mm512_storeu_ps(o.as_mut_ptr().add((i + t) * r + j0), *a);
                }
            }
        }
    }

    /// Rows of o one pass of [`vt_x`] computes (its accumulators: these rows by 48 columns).
    pub(super) const VT_ROWS: usize = 8;

    /// Rows ahead of the one in use whose stripe [`vt_x`] prefetches.
    const VT_AHEAD: usize = 6;

    /// o [r, n] = v^T . x for x [rows, n], v [rows, r], r a multiple of [`VT_ROWS`]: 8 rows of
    /// o by 48 columns in 24 registers, each row of x adding its 3 vectors times 8 broadcast
    /// values of v (3 loads and 8 broadcasts for 24 FMAs, where the column-at-a-time form of
    /// [`xt_v`] loaded and stored its accumulator for every 8). A ragged end of n is masked.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn vt_x(
        x: &[f32],
        v: &[f32],
        o: &mut [f32],
        rows: usize,
        n: usize,
        r: usize,
    ) {
        // SAFETY: AVX-512F, x of rows x n, v of rows x r and o of r x n with r a multiple of 8, as
        // `vt_x_block` asserts and checks: v is read at i * r + j0 + jj < rows * r; the
        // masked loads of x and stores of o touch only the lanes of columns below n in row
        // i < rows of x or j0 + jj < r of o (the pointers past a row are formed with
        // wrapping_add, never read); prefetches of rows ahead are hints that read nothing.
        unsafe {
            for j0 in (0..r).step_by(VT_ROWS) {
                for c0 in (0..n).step_by(48) {
                    let mask: [__mmask16; 3] = std::array::from_fn(|q| lanes(c0 + 16 * q, n));
                    let mut acc = [[_mm512_setzero_ps(); 3]; VT_ROWS];
                    for i in 0..rows {
                        // The rows are a stride of n apart, too far for the hardware to fetch
                        // ahead: ask for the stripe of a row VT_AHEAD on (the loads waited on L2
                        // and memory for 60% of this kernel's time without it).
                        if i + VT_AHEAD < rows {
                            let ahead = x.as_ptr().wrapping_add((i + VT_AHEAD) * n + c0);
                            for q in 0..3 {
                                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(16 * q).cast());
                            }
                        }
                        // Masked-off lanes are not read, so pointers past the row are not used.
                        let xv: [__m512; 3] = std::array::from_fn(|q| {
                            _mm512_maskz_loadu_ps(
                                mask[q],
                                x.as_ptr().wrapping_add(i * n + c0 + 16 * q),
                            )
                        });
                        for (jj, a) in acc.iter_mut().enumerate() {
                            let vb = _mm512_set1_ps(*v.get_unchecked(i * r + j0 + jj));
                            for q in 0..3 {
                                a[q] = _mm512_fmadd_ps(vb, xv[q], a[q]);
                            }
                        }
                    }
                    for (jj, a) in acc.iter().enumerate() {
                        for q in 0..3 {
                            let p = o.as_mut_ptr().wrapping_add((j0 + jj) * n + c0 + 16 * q);
                            _mm512_mask_storeu_ps(p, mask[q], a[q]);
                        }
                    }
                }
            }
        }
    }

    /// o [nr, n] += scale * u [nr, r] . m [r, n], four rows by four 16-column vectors at a
    /// time; a ragged last column group is masked.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn acc_u_m(
        o: &mut [f32],
        u: &[f32],
        m: &[f32],
        nr: usize,
        r: usize,
        n: usize,
        scale: f32,
    ) {
        // SAFETY: AVX-512F, o of nr rows of n, u of nr rows of r and m of r x n, as
        // `LowRank::acc_u_m` asserts; acc_rows gets rows i..i + 4 <= nr or i < nr.
        unsafe {
            let mut i = 0;
            while i + 4 <= nr {
                acc_rows::<4>(o, u, m, i, r, n, scale);
                i += 4;
            }
            while i < nr {
                acc_rows::<1>(o, u, m, i, r, n, scale);
                i += 1;
            }
        }
    }

    /// Lane mask of the 16-column vector starting at column c of n.
    fn lanes(c: usize, n: usize) -> __mmask16 {
        let left = n.saturating_sub(c).min(16);
        ((1u32 << left) - 1) as __mmask16
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn acc_rows<const N: usize>(
        o: &mut [f32],
        u: &[f32],
        m: &[f32],
        i: usize,
        r: usize,
        n: usize,
        scale: f32,
    ) {
        // SAFETY: AVX-512F and the shapes `acc_u_m` was called with, and rows i..i + N <= nr: u is
        // read at (i + t) * r + j < nr * r, and the masked loads of m and loads and stores
        // of o touch only the lanes of columns below n in row j < r of m or i + t < nr of o
        // (the pointers past a row come from wrapping_add and are never read).
        unsafe {
            let s = _mm512_set1_ps(scale);
            for c0 in (0..n).step_by(64) {
                let mask: [__mmask16; 4] = std::array::from_fn(|v| lanes(c0 + 16 * v, n));
                let mut acc = [[_mm512_setzero_ps(); 4]; N];
                for j in 0..r {
                    // Masked-off lanes are not read, so pointers past the row's end are not used.
                    let mv: [__m512; 4] = std::array::from_fn(|v| {
                        _mm512_maskz_loadu_ps(mask[v], m.as_ptr().wrapping_add(j * n + c0 + 16 * v))
                    });
                    for (t, a) in acc.iter_mut().enumerate() {
                        let uv = _mm512_set1_ps(*u.get_unchecked((i + t) * r + j));
                        for v in 0..4 {
                            a[v] = _mm512_fmadd_ps(uv, mv[v], a[v]);
                        }
                    }
                }
                for (t, a) in acc.iter().enumerate() {
                    for v in 0..4 {
                        let p = o.as_mut_ptr().wrapping_add((i + t) * n + c0 + 16 * v);
                        let old = _mm512_maskz_loadu_ps(mask[v], p);
                        _mm512_mask_storeu_ps(p, mask[v], _mm512_fmadd_ps(s, a[v], old));
                    }
                }
            }
        }
    }

    /// o [nc, r] = scale * x[:, c0..c0+nc]^T . v for x [rows, n] and v [rows, r], o zeroed
    /// on entry. Eight rows of v sit in registers while the block's columns stream by, each
    /// adding its eight products to its row of o (which stays in L2): x is read along its rows,
    /// as it lies in memory (a column-at-a-time walk crossed a page per row).
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn xt_v(
        x: &[f32],
        v: &[f32],
        o: &mut [f32],
        (c0, nc): (usize, usize),
        rows: usize,
        n: usize,
        r: usize,
        scale: f32,
    ) {
        // SAFETY: AVX-512F, x of rows x n, v of rows x r with r a multiple of 16, and o of nc rows
        // of r for columns c0..c0 + nc <= n, as `LowRank::xt_v` asserts and slices; xt_rows
        // gets rows i..i + 8 <= rows or i < rows, and the scaling pass reads and writes o
        // at c * r + j0 + 16 <= nc * r.
        unsafe {
            for j0 in (0..r).step_by(16) {
                let mut i = 0;
                while i + 8 <= rows {
                    xt_rows::<8>(x, v, o, (c0, nc), i, n, r, j0);
                    i += 8;
                }
                while i < rows {
                    xt_rows::<1>(x, v, o, (c0, nc), i, n, r, j0);
                    i += 1;
                }
            }
            let s = _mm512_set1_ps(scale);
            for c in 0..nc {
                for j0 in (0..r).step_by(16) {
                    let p = o.as_mut_ptr().add(c * r + j0);
                    _mm512_storeu_ps(p, _mm512_mul_ps(s, _mm512_loadu_ps(p)));
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn xt_rows<const N: usize>(
        x: &[f32],
        v: &[f32],
        o: &mut [f32],
        (c0, nc): (usize, usize),
        i: usize,
        n: usize,
        r: usize,
        j0: usize,
    ) {
        // SAFETY: AVX-512F and the shapes `xt_v` was called with, and rows i..i + N <= rows: v is
        // read at (i + t) * r + j0 + 16 <= rows * r, x at (i + t) * n + c0 + c < rows * n
        // (c0 + c < n), o read and written at c * r + j0 + 16 <= nc * r.
        unsafe {
            let vv: [__m512; N] =
                std::array::from_fn(|t| _mm512_loadu_ps(v.as_ptr().add((i + t) * r + j0)));
            for c in 0..nc {
                let p = o.as_mut_ptr().add(c * r + j0);
                let mut acc = _mm512_loadu_ps(p);
                for (t, vt) in vv.iter().enumerate() {
                    let xv = _mm512_set1_ps(*x.get_unchecked((i + t) * n + c0 + c));
                    acc = _mm512_fmadd_ps(xv, *vt, acc);
                }
                _mm512_storeu_ps(p, acc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect()
    }

    /// [a, c] = l [a, b] . rt^T for rt [c, b], summed in f64.
    fn naive(l: &[f32], rt: &[f32], a: usize, b: usize, c: usize) -> Vec<f64> {
        (0..a)
            .flat_map(|i| {
                (0..c).map(move |j| {
                    (0..b)
                        .map(|k| f64::from(l[i * b + k]) * f64::from(rt[j * b + k]))
                        .sum()
                })
            })
            .collect()
    }

    fn close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!(
                (f64::from(g) - w).abs() < 1e-4 * (1.0 + w.abs()),
                "{what}[{i}]: {g} vs {w}"
            );
        }
    }

    /// The block product: ranks on the AVX-512 path (16, 8) and off it (3), widths that end
    /// mid-vector and mid-48, one row and a full block; `o` starts stale (every element written).
    #[test]
    fn the_block_product_matches_f64_sums() {
        for &(rows, _, n, r) in &[
            (64, 37, 150, 16),
            (1, 16, 17, 16),
            (9, 40, 48, 8),
            (13, 24, 97, 3),
            (5, 576, 1536, 16),
        ] {
            let (xn, v) = (data(rows * n, 5), data(rows * r, 6));
            let mut o = vec![f32::NAN; r * n];
            vt_x_block(&xn, &v, &mut o, rows, n, r);
            let want = naive(
                &transpose(&v, rows, r),
                &transpose(&xn, rows, n),
                r,
                rows,
                n,
            );
            close(&o, &want, "vt_x_block");
        }
    }

    /// Rank 16 and 32 (the fast path where the CPU has AVX-512), rank 5 (gemm), row counts with
    /// and without ragged blocks, and widths with a masked last vector.
    #[test]
    fn the_three_products_match_f64_sums() {
        for &(rows, k, n, r) in &[
            (70, 37, 150, 16),
            (9, 64, 64, 32),
            (1, 5, 17, 16),
            (13, 24, 40, 5),
            (130, 576, 200, 16),
        ] {
            let x = data(rows * k, 1);
            let m = data(k * r, 2);
            let got = f32::x_m(&x, &m, rows, k, r);
            close(&got, &naive(&x, &transpose(&m, k, r), rows, k, r), "x_m");

            let u = data(rows * r, 3);
            let mn = data(r * n, 4);
            let mut out = data(rows * n, 5);
            let before: Vec<f64> = out.iter().map(|&v| f64::from(v)).collect();
            f32::acc_u_m(&mut out, &u, &mn, rows, r, 0.5);
            let prod = naive(&u, &transpose(&mn, r, n), rows, r, n);
            let want: Vec<f64> = before.iter().zip(&prod).map(|(b, p)| b + 0.5 * p).collect();
            close(&out, &want, "acc_u_m");

            let xn = data(rows * n, 6);
            let got = f32::xt_v(&xn, &u, rows, n, r, -2.0);
            let want: Vec<f64> = naive(
                &transpose(&xn, rows, n),
                &transpose(&u, rows, r),
                n,
                rows,
                r,
            )
            .into_iter()
            .map(|v| -2.0 * v)
            .collect();
            close(&got, &want, "xt_v");
        }
    }

    #[test]
    fn f64_goes_through_gemm_with_the_same_meaning() {
        let (rows, k, r) = (3, 4, 2);
        let x: Vec<f64> = (0..rows * k).map(|v| v as f64).collect();
        let m: Vec<f64> = (0..k * r).map(|v| v as f64 * 0.5).collect();
        // Row 0 of x is 0 1 2 3; column 0 of m is 0.5 * (0 2 4 6) = 0 1 2 3: 0 + 1 + 4 + 9.
        assert_eq!(f64::x_m(&x, &m, rows, k, r)[0], 14.0);
        let got = f64::xt_v(&x, &x, rows, k, k, 1.0);
        // (x^T x)[0][0] = 0 + 16 + 64.
        assert_eq!(got[0], 80.0);
    }
}
