//! `e^(x - shift)` over a slice, 16 lanes at a time with AVX-512 for f32.
//!
//! Softmax, log-softmax and attention call `exp` once per score: with the scalar libm call that
//! was 7% of a bf16 LoRA step. The vector form is Cephes' `expf` (range reduction by ln 2 in two
//! parts, a degree-6 polynomial, then the exponent put back with `vscalefps`): within 2 ulp of
//! the exact value over the whole range (the test checks it against f64), exactly 1 at 0, 0 at
//! -inf, inf past the overflow point and NaN for NaN, as `f32::exp`.

/// Element types with a slice exponential.
pub(crate) trait ExpSlice: Sized {
    /// `x[i] <- e^(x[i] - shift)` for every element.
    fn exp_shifted(x: &mut [Self], shift: Self);
}

impl ExpSlice for f64 {
    fn exp_shifted(x: &mut [f64], shift: f64) {
        x.iter_mut().for_each(|v| *v = (*v - shift).exp());
    }
}

impl ExpSlice for f32 {
    fn exp_shifted(x: &mut [f32], shift: f32) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            unsafe { avx512::exp_shifted(x, shift) };
            return;
        }
        x.iter_mut().for_each(|v| *v = (*v - shift).exp());
    }
}

/// `sum_i e^(x[i] - shift)` in f64 over the f32 exponentials [`ExpSlice::exp_shifted`] would
/// write, without writing them: one pass and no buffer (a decoding step takes it over each
/// row's 49k logits for the chosen token's log-probability, where a copy, a pass of exps and a
/// serial f64 sum took three). The sum runs in lanes: a fixed order, not a left-to-right sum's
/// bits.
pub(crate) fn exp_shifted_sum(x: &[f32], shift: f32) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked just above).
        return unsafe { avx512::exp_shifted_sum(x, shift) };
    }
    let mut lanes = [0f64; 8];
    let chunks = x.chunks_exact(8);
    let tail: f64 = chunks
        .remainder()
        .iter()
        .map(|&v| f64::from((v - shift).exp()))
        .sum();
    for c in chunks {
        for (a, &v) in lanes.iter_mut().zip(c) {
            *a += f64::from((v - shift).exp());
        }
    }
    lanes.iter().sum::<f64>() + tail
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    use std::arch::x86_64::*;

    /// Cephes' expf polynomial for e^r on [-ln2/2, ln2/2], highest degree first.
    const P: [f32; 6] = [
        1.987_569_2e-4,
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        0.166_666_65,
        0.5,
    ];
    /// ln 2 in two parts: the first exact in few bits, so n * LN2_HI is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;

    /// e^v in each of 16 lanes (Cephes' polynomial, see `P`).
    #[target_feature(enable = "avx512f")]
    pub(in crate::ops) unsafe fn exp16(v: __m512) -> __m512 {
        // Past these e^x is 0 or inf in f32; the clamps keep n in range. max/min return their
        // second operand when either is NaN, so NaN passes through.
        let v = _mm512_max_ps(_mm512_set1_ps(-110.0), v);
        let v = _mm512_min_ps(_mm512_set1_ps(89.0), v);
        let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm512_mul_ps(v, _mm512_set1_ps(std::f32::consts::LOG2_E)),
        );
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), v);
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
        let mut p = _mm512_set1_ps(P[0]);
        for &c in &P[1..] {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
        }
        // 1 + r + r^2 p(r), then times 2^n.
        let y = _mm512_add_ps(
            _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r),
            _mm512_set1_ps(1.0),
        );
        _mm512_scalef_ps(y, n)
    }

    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn exp_shifted(x: &mut [f32], shift: f32) {
        // SAFETY: the caller guarantees AVX-512F (this fn's contract). Each full load and store
        // covers one 16-float chunk of `x`; the tail's masked load and store touch only the
        // `rest.len()` lanes inside `rest`.
        unsafe {
            let s = _mm512_set1_ps(shift);
            let mut chunks = x.chunks_exact_mut(16);
            for c in &mut chunks {
                let v = _mm512_sub_ps(_mm512_loadu_ps(c.as_ptr()), s);
                _mm512_storeu_ps(c.as_mut_ptr(), exp16(v));
            }
            let rest = chunks.into_remainder();
            if !rest.is_empty() {
                let m: __mmask16 = (1u32 << rest.len()).wrapping_sub(1) as __mmask16;
                let v = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, rest.as_ptr()), s);
                _mm512_mask_storeu_ps(rest.as_mut_ptr(), m, exp16(v));
            }
        }
    }

    /// The 16 lanes of `e` added into two f64 accumulators (8 lanes each).
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn add_wide(acc: &mut [__m512d; 2], e: __m512) {
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(e)));
        acc[0] = _mm512_add_pd(acc[0], _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        acc[1] = _mm512_add_pd(acc[1], _mm512_cvtps_pd(hi));
    }

    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn exp_shifted_sum(x: &[f32], shift: f32) -> f64 {
        // SAFETY: the caller guarantees AVX-512F (this fn's contract). Each unmasked load reads 16
        // floats at 16 * h < 32 in a 32-float chunk of `x`; the tail's masked loads read
        // only the `c.len()` lanes inside `c`; `add_wide` and `exp16` need only AVX-512F.
        unsafe {
            let s = _mm512_set1_ps(shift);
            // Two sets of accumulators: four independent chains of f64 adds.
            let mut acc = [[_mm512_setzero_pd(); 2]; 2];
            let mut chunks = x.chunks_exact(32);
            for c in &mut chunks {
                for (h, a) in acc.iter_mut().enumerate() {
                    let v = _mm512_sub_ps(_mm512_loadu_ps(c.as_ptr().add(16 * h)), s);
                    add_wide(a, exp16(v));
                }
            }
            for c in chunks.remainder().chunks(16) {
                let m: __mmask16 = (1u32 << c.len()).wrapping_sub(1) as __mmask16;
                let v = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, c.as_ptr()), s);
                // The lanes past the slice hold e^(0 - shift): zeroed before they are added.
                add_wide(&mut acc[0], _mm512_maskz_mov_ps(m, exp16(v)));
            }
            let a = _mm512_add_pd(
                _mm512_add_pd(acc[0][0], acc[0][1]),
                _mm512_add_pd(acc[1][0], acc[1][1]),
            );
            _mm512_reduce_add_pd(a)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ExpSlice;

    /// Distance in units in the last place between two f32 of one sign.
    fn ulps(a: f32, b: f32) -> u32 {
        (i64::from(a.to_bits()) - i64::from(b.to_bits())).unsigned_abs() as u32
    }

    #[test]
    fn within_two_ulp_of_the_exact_value_everywhere() {
        // Every 397th float from -87 to 88.7 (about 5.8 million values).
        let mut worst = 0;
        let (lo, hi) = ((-87.0f32).to_bits(), 88.7f32.to_bits());
        // Negative floats' bit patterns run from 0x8000_0000 (-0) up as the values fall.
        let mut x: Vec<f32> = (0x8000_0000..=lo)
            .step_by(397)
            .map(f32::from_bits)
            .collect();
        x.extend((0..=hi).step_by(397).map(f32::from_bits));
        let mut y = x.clone();
        f32::exp_shifted(&mut y, 0.0);
        for (&xi, &yi) in x.iter().zip(&y) {
            let want = f64::from(xi).exp() as f32;
            worst = worst.max(ulps(yi, want));
        }
        assert!(worst <= 2, "worst error {worst} ulp");
        // The shift is subtracted first.
        let mut z = vec![3.5f32; 37];
        f32::exp_shifted(&mut z, 1.25);
        assert!(
            z.iter().all(|&v| ulps(v, (2.25f64).exp() as f32) <= 2),
            "{z:?}"
        );
    }

    /// The fused sum is the f64 sum of the exponentials `exp_shifted` writes, whatever the
    /// length (full 32-blocks, a 16-block and ragged tails), with -inf adding nothing.
    #[test]
    fn exp_shifted_sum_adds_what_exp_shifted_writes() {
        for n in [0usize, 1, 15, 16, 17, 31, 32, 33, 48, 63, 1000, 49_152] {
            let x: Vec<f32> = (0..n)
                .map(|i| match i % 97 {
                    5 => f32::NEG_INFINITY,
                    _ => ((i * 7919) % 2003) as f32 / 100.0 - 15.0,
                })
                .collect();
            let mut e = x.clone();
            f32::exp_shifted(&mut e, 2.5);
            let want: f64 = e.iter().map(|&v| f64::from(v)).sum();
            let got = super::exp_shifted_sum(&x, 2.5);
            assert!(
                (got - want).abs() <= 1e-12 * want.abs(),
                "{n}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn special_values_are_those_of_exp() {
        let mut x = vec![
            0.0f32,
            f32::NEG_INFINITY,
            f32::INFINITY,
            f32::NAN,
            100.0,
            -200.0,
            -0.0,
        ];
        f32::exp_shifted(&mut x, 0.0);
        assert_eq!(x[0], 1.0);
        assert_eq!(x[1], 0.0);
        assert_eq!(x[2], f32::INFINITY);
        assert!(x[3].is_nan());
        assert_eq!(x[4], f32::INFINITY);
        assert_eq!(x[5], 0.0);
        assert_eq!(x[6], 1.0);
        // Ragged tails of every length take the masked path.
        for n in 0..40 {
            let mut v: Vec<f32> = (0..n).map(|i| i as f32 * 0.1 - 2.0).collect();
            let want: Vec<f32> = v.iter().map(|a| a.exp()).collect();
            f32::exp_shifted(&mut v, 0.0);
            for (a, b) in v.iter().zip(&want) {
                assert!(ulps(*a, *b) <= 2, "{n}: {a} vs {b}");
            }
        }
    }
}
