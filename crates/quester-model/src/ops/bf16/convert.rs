//! f32 to bf16 conversion: round to nearest even, as `vcvtneps2bf16` and PyTorch do.

/// The bf16 bits of `x` (round to nearest even; NaN stays NaN).
pub(crate) fn bf16_bits(x: f32) -> u16 {
    half::bf16::from_f32(x).to_bits()
}

/// `x` rounded to the nearest bf16 value, as an f32 (for references in tests).
#[cfg(test)]
pub(crate) fn round_to_bf16(x: f32) -> f32 {
    half::bf16::from_bits(bf16_bits(x)).to_f32()
}

/// `dst[i] = bf16(src[i])`; the two have one length.
pub(crate) fn convert(src: &[f32], dst: &mut [u16]) {
    debug_assert_eq!(src.len(), dst.len());
    #[cfg(target_arch = "x86_64")]
    {
        if super::has_bf16_kernel() {
            // SAFETY: the CPU has AVX-512F and AVX512-BF16 (checked).
            unsafe { avx512::convert(src, dst) };
            return;
        }
    }
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = bf16_bits(s);
    }
}

/// Two rows converted and interleaved as pairs: `dst[i] = bf16(lo[i]) | bf16(hi[i]) << 16`
/// (the `u32` one lane of `vdpbf16ps` reads). `hi` absent is a row of zeros (odd k). The three
/// have one length.
pub(crate) fn interleave(lo: &[f32], hi: Option<&[f32]>, dst: &mut [u32]) {
    debug_assert!(lo.len() == dst.len() && hi.is_none_or(|h| h.len() == lo.len()));
    #[cfg(target_arch = "x86_64")]
    {
        if super::has_bf16_kernel() {
            // SAFETY: the CPU has AVX-512F and AVX512-BF16 (checked).
            unsafe { avx512::interleave(lo, hi, dst) };
            return;
        }
    }
    let high = |i: usize| hi.map_or(0, |h| u32::from(bf16_bits(h[i])) << 16);
    for (i, (d, &l)) in dst.iter_mut().zip(lo).enumerate() {
        *d = u32::from(bf16_bits(l)) | high(i);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has AVX-512F and AVX512-BF16; the slices have one length.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn convert(src: &[f32], dst: &mut [u16]) {
        // SAFETY: the caller guarantees AVX-512F and AVX512-BF16 (this fn's contract); each load
        // reads 16 floats of src and each store writes 16 u16 of dst at i with i + 16 <= n,
        // the shorter length; the transmute reinterprets 16 bf16 (256 bits) as the same 256
        // bits of __m256i.
        unsafe {
            let n = src.len().min(dst.len());
            let mut i = 0;
            while i + 16 <= n {
                let v = _mm512_loadu_ps(src.as_ptr().add(i));
                let b: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(v));
                _mm256_storeu_si256(dst.as_mut_ptr().add(i).cast(), b);
                i += 16;
            }
            for j in i..n {
                dst[j] = super::bf16_bits(src[j]);
            }
        }
    }

    /// [`super::interleave`] 16 pairs a step, the tail under a mask: two conversions, each
    /// half widened to 32 bits, the high one shifted up (the scalar form went through a scratch
    /// row and a pair loop, and packing the output head's gradient spent most of its time
    /// there).
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX512-BF16; `hi`, when given, is as long as `lo`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn interleave(lo: &[f32], hi: Option<&[f32]>, dst: &mut [u32]) {
        // SAFETY: the caller guarantees AVX-512F and AVX512-BF16 and `hi` as long as `lo` (this
        // fn's contract); the mask `m` keeps the lanes below n - i, so every load of lo and
        // hi and the store into dst touch elements below n, the shorter of lo and dst.
        unsafe {
            let n = lo.len().min(dst.len());
            let mut i = 0;
            while i < n {
                let m: __mmask16 = if n - i >= 16 { !0 } else { (1 << (n - i)) - 1 };
                let mut v = half(lo.as_ptr().add(i), m);
                if let Some(h) = hi {
                    v = _mm512_or_si512(v, _mm512_slli_epi32::<16>(half(h.as_ptr().add(i), m)));
                }
                _mm512_mask_storeu_epi32(dst.as_mut_ptr().add(i).cast(), m, v);
                i += 16;
            }
        }
    }

    /// The `m` lanes of 16 f32 at `src` as bf16 bits, each in the low half of a 32-bit lane.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn half(src: *const f32, m: __mmask16) -> __m512i {
        // SAFETY: the caller has AVX-512F and AVX512-BF16 (`interleave` runs with them) and `src`
        // valid for the lanes set in `m` (the masked load reads only those); the transmute
        // reinterprets 16 bf16 (256 bits) as the same 256 bits of __m256i.
        unsafe {
            let b: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src)));
            _mm512_cvtepu16_epi32(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_nearest_even_like_the_instruction() {
        // 1 + 2^-8 is halfway between two bf16 values: ties go to the even mantissa (1.0);
        // 1 + 3 * 2^-8 goes up to 1 + 2^-6... i.e. to the even neighbour above.
        assert_eq!(round_to_bf16(1.0 + 1.0 / 256.0), 1.0);
        assert_eq!(round_to_bf16(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
        assert_eq!(round_to_bf16(-2.5), -2.5);
        assert!(round_to_bf16(f32::NAN).is_nan());
        let xs: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
        let mut fast = vec![0u16; xs.len()];
        convert(&xs, &mut fast);
        let slow: Vec<u16> = xs.iter().map(|&x| bf16_bits(x)).collect();
        assert_eq!(fast, slow);
    }

    #[test]
    fn interleaves_pairs_low_first() {
        let mut d = vec![0u32; 2];
        interleave(&[1.0, 2.0], Some(&[3.0, 4.0]), &mut d);
        assert_eq!(
            d[0],
            u32::from(bf16_bits(1.0)) | u32::from(bf16_bits(3.0)) << 16
        );
        interleave(&[1.0, 2.0], None, &mut d);
        assert_eq!(d[1], u32::from(bf16_bits(2.0)));
    }

    /// The vector form against the pair-at-a-time one, at lengths around its 16-lane steps
    /// (the tails go under a mask).
    #[test]
    fn interleaves_like_the_scalar_pairs_at_every_tail() {
        for n in [1, 15, 16, 17, 47, 48, 100] {
            let lo: Vec<f32> = (0..n).map(|i| (i as f32 * 0.61).sin() * 77.0).collect();
            let hi: Vec<f32> = (0..n).map(|i| (i as f32 * 0.29).cos() * 1e-3).collect();
            for h in [Some(&hi[..]), None] {
                let mut d = vec![7u32; n];
                interleave(&lo, h, &mut d);
                let want: Vec<u32> = (0..n)
                    .map(|i| {
                        let high = h.map_or(0, |h| u32::from(bf16_bits(h[i])) << 16);
                        u32::from(bf16_bits(lo[i])) | high
                    })
                    .collect();
                assert_eq!(d, want, "n {n}, hi {}", h.is_some());
            }
        }
    }
}
