//! One row block of A (bf16 pairs) against one panel of 48 columns, on the kernel asked for:
//! AMX tiles, AVX512-BF16 register tiles of 8, 4, 2, 1 rows, or the portable loop.

use super::panels::PANEL;
use super::Bf16Kernel;
use crate::ops::tiles::{row_tiles, TILE_ROWS};

/// y[r, c] = sum over pairs q of a[r][q] . panel[q][c] for `rows` rows.
///
/// # Safety
/// `kernel` is available; `a` holds `rows` rows of `kp` pairs (rounded up to the kernel's
/// [`Bf16Kernel::row_step`], and `kp` its [`Bf16Kernel::pair_stride`]); `panel` holds kp * 48
/// pairs; `(y, ys, cols)`: `y` points at column 0 of the panel in row 0 of an output of row
/// stride `ys`, valid for `rows` rows and `cols` <= 48 columns.
pub(super) unsafe fn panel_product(
    kernel: Bf16Kernel,
    a: &[u32],
    rows: usize,
    kp: usize,
    panel: &[u32],
    (y, ys, cols): (*mut f32, usize, usize),
) {
    debug_assert!(a.len() >= rows * kp && panel.len() >= kp * PANEL && cols <= PANEL);
    #[cfg(target_arch = "x86_64")]
    {
        if kernel == Bf16Kernel::Amx {
            super::amx::panel_product(a, rows, kp, panel, y, ys, cols);
            return;
        }
        if kernel == Bf16Kernel::Avx512Bf16 {
            for (r, n) in row_tiles(rows) {
                let ar = &a[r * kp..(r + n) * kp];
                let yr = y.add(r * ys);
                match n {
                    TILE_ROWS => avx512::tile::<TILE_ROWS>(ar, kp, panel, yr, ys, cols),
                    4 => avx512::tile::<4>(ar, kp, panel, yr, ys, cols),
                    2 => avx512::tile::<2>(ar, kp, panel, yr, ys, cols),
                    _ => avx512::tile::<1>(ar, kp, panel, yr, ys, cols),
                }
            }
            return;
        }
    }
    for r in 0..rows {
        portable_row(&a[r * kp..(r + 1) * kp], panel, y.add(r * ys), cols);
    }
}

/// The two halves of a pair as f32 (a bf16 is the top half of an f32).
fn halves(p: u32) -> (f32, f32) {
    (f32::from_bits(p << 16), f32::from_bits(p & 0xffff_0000))
}

/// One row against one panel without the instruction: the same pair products (exact in f32)
/// added in the same order over k.
///
/// # Safety
/// `y` is valid for `cols` writes.
pub(super) unsafe fn portable_row(a: &[u32], panel: &[u32], y: *mut f32, cols: usize) {
    let mut acc = [0f32; PANEL];
    for (&ap, w) in a.iter().zip(panel.chunks_exact(PANEL)) {
        let (a0, a1) = halves(ap);
        for (s, &wp) in acc.iter_mut().zip(w) {
            let (w0, w1) = halves(wp);
            *s = *s + a1 * w1 + a0 * w0;
        }
    }
    std::ptr::copy_nonoverlapping(acc.as_ptr(), y, cols);
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::PANEL;
    use std::arch::x86_64::*;

    /// `R` rows against one panel: R x 3 accumulators, one `vdpbf16ps` chain over k per output.
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX512-BF16; `a` holds R rows of `kp` pairs, `panel` kp * 48
    /// pairs, and `y` is valid for `cols` (<= 48) writes in each of R rows of stride `ys`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn tile<const R: usize>(
        a: &[u32],
        kp: usize,
        panel: &[u32],
        y: *mut f32,
        ys: usize,
        cols: usize,
    ) {
        debug_assert!(a.len() >= R * kp && panel.len() >= kp * PANEL && cols <= PANEL);
        let (ap, wp) = (a.as_ptr(), panel.as_ptr());
        let mut acc = [[_mm512_setzero_ps(); 3]; R];
        for q in 0..kp {
            let w = wp.add(q * PANEL);
            let w0: __m512bh = std::mem::transmute(_mm512_loadu_si512(w.cast()));
            let w1: __m512bh = std::mem::transmute(_mm512_loadu_si512(w.add(16).cast()));
            let w2: __m512bh = std::mem::transmute(_mm512_loadu_si512(w.add(32).cast()));
            for (r, s) in acc.iter_mut().enumerate() {
                let b: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*ap.add(r * kp + q) as i32));
                s[0] = _mm512_dpbf16_ps(s[0], b, w0);
                s[1] = _mm512_dpbf16_ps(s[1], b, w1);
                s[2] = _mm512_dpbf16_ps(s[2], b, w2);
            }
        }
        crate::ops::tiles::avx512::store_tile(&acc, y, ys, cols);
    }
}
