//! SwiGLU's f32 passes in AVX-512 lanes, each element read and written once.
//!
//! The portable passes in `swiglu.rs` write `-g`, exponentiate it in place, divide, then
//! multiply: four passes over each chunk, the division and products in the 4 lanes of the
//! baseline x86-64 build. Here one pass keeps everything in registers. The operations and
//! their order are the portable ones (no fused multiply-adds outside `exp16`), so the results
//! are bit-identical to them.

use crate::ops::vexp::avx512::exp16;
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// `1 / (1 + e^-g)` in each lane.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn sigmoid16(g: __m512) -> __m512 {
    // -g by its sign bit, as the portable pass negates.
    let neg = _mm512_castsi512_ps(_mm512_xor_si512(
        _mm512_castps_si512(g),
        _mm512_set1_epi32(i32::MIN),
    ));
    let one = _mm512_set1_ps(1.0);
    // SAFETY: exp16 needs AVX-512F only, which this fn is compiled with (and its callers'
    // callers checked at run time).
    _mm512_div_ps(one, _mm512_add_ps(one, unsafe { exp16(neg) }))
}

/// Mask of the first `n` (< 16) lanes.
fn tail_mask(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

/// `g sigmoid(g) u` in each lane.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn lane(gv: __m512, uv: __m512) -> __m512 {
    // SAFETY: sigmoid16 needs AVX-512F only, as this fn.
    _mm512_mul_ps(_mm512_mul_ps(gv, unsafe { sigmoid16(gv) }), uv)
}

/// SwiGLU's two gradients in each lane: `(dy u s (1 + g (1 - s)), dy g s)`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn lanes(gv: __m512, uv: __m512, yv: __m512) -> (__m512, __m512) {
    let one = _mm512_set1_ps(1.0);
    // SAFETY: sigmoid16 needs AVX-512F only, as this fn.
    let s = unsafe { sigmoid16(gv) };
    let slope = _mm512_add_ps(one, _mm512_mul_ps(gv, _mm512_sub_ps(one, s)));
    let d_gate = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(yv, uv), s), slope);
    let d_up = _mm512_mul_ps(_mm512_mul_ps(yv, gv), s);
    (d_gate, d_up)
}

/// `out[i] <- g[i] * sigmoid(g[i]) * u[i]`.
///
/// # Safety
/// The CPU must have AVX-512F; the three slices must have the same length.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn forward(g: &[f32], u: &[f32], out: &mut [MaybeUninit<f32>]) {
    // SAFETY: the caller guarantees AVX-512F (this fn's contract) and the first assert makes g,
    // u and out one length n: the full loads and stores cover elements i..i + 16 <= full <= n,
    // the tail's masked ones only the n - full lanes from `full`; out's MaybeUninit<f32> has
    // f32's layout, and each element is written, never read.
    unsafe {
        assert!(
            g.len() == u.len() && g.len() == out.len(),
            "swiglu: chunk lengths"
        );
        let (n, full) = (g.len(), g.len() / 16 * 16);
        let (gp, up, op) = (g.as_ptr(), u.as_ptr(), out.as_mut_ptr().cast::<f32>());
        for i in (0..full).step_by(16) {
            let y = lane(_mm512_loadu_ps(gp.add(i)), _mm512_loadu_ps(up.add(i)));
            _mm512_storeu_ps(op.add(i), y);
        }
        if full < n {
            let m = tail_mask(n - full);
            let y = lane(
                _mm512_maskz_loadu_ps(m, gp.add(full)),
                _mm512_maskz_loadu_ps(m, up.add(full)),
            );
            _mm512_mask_storeu_ps(op.add(full), m, y);
        }
    }
}

/// `dg[i] <- dy u s (1 + g (1 - s))` and `du[i] <- dy g s` for `s = sigmoid(g[i])`.
///
/// # Safety
/// The CPU must have AVX-512F; the five slices must have the same length.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn backward(
    (g, u, dy): (&[f32], &[f32], &[f32]),
    dg: &mut [MaybeUninit<f32>],
    du: &mut [MaybeUninit<f32>],
) {
    // SAFETY: the caller guarantees AVX-512F (this fn's contract) and the assert makes the five
    // slices one length n: the full loads and stores cover elements i..i + 16 <= full <= n,
    // the tail's masked ones only the n - full lanes from `full`; dg's and du's
    // MaybeUninit<f32> has f32's layout, and each element is written, never read.
    unsafe {
        let n = g.len();
        assert!(
            u.len() == n && dy.len() == n && dg.len() == n && du.len() == n,
            "swiglu backward: chunk lengths"
        );
        let full = n / 16 * 16;
        let (gp, up, yp) = (g.as_ptr(), u.as_ptr(), dy.as_ptr());
        let (dgp, dup) = (dg.as_mut_ptr().cast::<f32>(), du.as_mut_ptr().cast::<f32>());
        for i in (0..full).step_by(16) {
            let (a, b) = lanes(
                _mm512_loadu_ps(gp.add(i)),
                _mm512_loadu_ps(up.add(i)),
                _mm512_loadu_ps(yp.add(i)),
            );
            _mm512_storeu_ps(dgp.add(i), a);
            _mm512_storeu_ps(dup.add(i), b);
        }
        if full < n {
            let m = tail_mask(n - full);
            let (a, b) = lanes(
                _mm512_maskz_loadu_ps(m, gp.add(full)),
                _mm512_maskz_loadu_ps(m, up.add(full)),
                _mm512_maskz_loadu_ps(m, yp.add(full)),
            );
            _mm512_mask_storeu_ps(dgp.add(full), m, a);
            _mm512_mask_storeu_ps(dup.add(full), m, b);
        }
    }
}
