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
/// (the `u32` one lane of `vdpbf16ps` reads). `hi` absent is a row of zeros (odd k).
pub(crate) fn interleave(lo: &[f32], hi: Option<&[f32]>, dst: &mut [u32], scratch: &mut Vec<u16>) {
    let n = lo.len();
    scratch.resize(2 * n, 0);
    let (a, b) = scratch.split_at_mut(n);
    convert(lo, a);
    match hi {
        Some(h) => convert(h, b),
        None => b.fill(0),
    }
    for ((d, &l), &h) in dst.iter_mut().zip(a.iter()).zip(b.iter()) {
        *d = u32::from(l) | (u32::from(h) << 16);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has AVX-512F and AVX512-BF16; the slices have one length.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn convert(src: &[f32], dst: &mut [u16]) {
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
        let mut s = Vec::new();
        interleave(&[1.0, 2.0], Some(&[3.0, 4.0]), &mut d, &mut s);
        assert_eq!(
            d[0],
            u32::from(bf16_bits(1.0)) | u32::from(bf16_bits(3.0)) << 16
        );
        interleave(&[1.0, 2.0], None, &mut d, &mut s);
        assert_eq!(d[1], u32::from(bf16_bits(2.0)));
    }
}
