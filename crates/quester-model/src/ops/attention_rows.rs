//! The two products of attention for a few query rows against a head's keys and values, as
//! decoding runs them (one new token per sequence, the G query heads of a key/value head
//! together): scores `s = Q K^T` and outputs `o = P V`.
//!
//! gemm packs K (or V) into its layout on every call, which for three query rows is most of
//! the work; and a dot product per (row, key) spends as long summing its vector as computing
//! it. Here, for f32 with AVX-512 and a head width of 64: each query row sits in 4 registers
//! while 16 keys stream past, and the 16 vectors of partial sums are reduced together into one
//! vector of 16 scores (45 instructions instead of 16 separate reductions); the outputs of up
//! to 3 rows stay in registers while every value row is read once. Other types and widths take
//! plain loops with the same meaning.
//!
//! Keys and values may also be bf16 (a bf16 KV cache, [`CacheElem`]): decoding is bound by
//! reading the cache, and bf16 halves what it reads. Each element is widened to f32 exactly in
//! the register it is loaded into; the products and sums are the f32 ones.

use super::Float;

/// The element type of keys and values read by these kernels for queries of type `T`: `T`
/// itself, or bf16 for f32 queries.
pub(crate) trait CacheElem<T>: Copy + Send + Sync + 'static {
    /// The value as `T` (exact).
    fn widen(self) -> T;
}

impl CacheElem<f32> for f32 {
    fn widen(self) -> f32 {
        self
    }
}

impl CacheElem<f64> for f64 {
    fn widen(self) -> f64 {
        self
    }
}

impl CacheElem<f32> for half::bf16 {
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

/// `x` as a slice of `U` when `T` is `U`.
fn same<T: 'static, U: 'static>(x: &[T]) -> Option<&[U]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<U>())
        // SAFETY: T is U (checked just above).
        .then(|| unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<U>(), x.len()) })
}

/// Whether the AVX-512 kernels take keys of type `K` (f32 or bf16) with f32 queries.
#[cfg(target_arch = "x86_64")]
fn lanes_for<K: 'static>() -> bool {
    use std::any::TypeId;
    let k = TypeId::of::<K>();
    k == TypeId::of::<f32>() || k == TypeId::of::<half::bf16>()
}

/// `s[r * s_rs + j] = q_r . k_j` for `rows` query rows `q` [rows, d] and `kn` keys `k` [kn, d].
pub(crate) fn scores<T: Float, K: CacheElem<T>>(
    q: &[T],
    k: &[K],
    (rows, kn, d): (usize, usize, usize),
    s: &mut [T],
    s_rs: usize,
) {
    assert!(
        q.len() >= rows * d
            && k.len() >= kn * d
            && (rows == 0 || s.len() >= (rows - 1) * s_rs + kn),
        "attention scores: shapes"
    );
    #[cfg(target_arch = "x86_64")]
    if let Some(q) = as_f32(q) {
        if d == 64 && lanes_for::<K>() && std::is_x86_feature_detected!("avx512f") {
            let s = as_f32_mut(s).expect("s has q's type");
            if std::mem::size_of::<K>() == 2 && rows > 1 {
                // bf16 keys for several rows (decoding's G query heads): each block of 16 keys
                // widened to f32 once, in a buffer that stays in L1, and every row's scores
                // taken from it (widening per row was a third of the kernel's instructions,
                // repeated G times). The same blocks and sums as row by row: the same bits.
                let mut wide = [0f32; 16 * 64];
                for j in (0..kn).step_by(16) {
                    let n = (kn - j).min(16);
                    // SAFETY: AVX-512F is present; keys j..j+n are in range (asserted above) and
                    // `wide` holds 16 of them.
                    unsafe { avx512::widen(k[j * 64..].as_ptr(), &mut wide[..n * 64]) };
                    for r in 0..rows {
                        // SAFETY: AVX-512F is present; row r of q, n widened keys and scores
                        // j..j+n of row r are in range (asserted above).
                        unsafe {
                            avx512::scores_row(&q[r * 64..], &wide, n, &mut s[r * s_rs + j..]);
                        };
                    }
                }
                return;
            }
            for r in 0..rows {
                // SAFETY: AVX-512F is present; row r of q, kn rows of k and kn scores of row r
                // are in range (asserted above).
                unsafe { avx512::scores_row(&q[r * 64..], k, kn, &mut s[r * s_rs..]) };
            }
            return;
        }
    }
    let mut wide = Vec::new();
    for j in 0..kn {
        let kj = &k[j * d..(j + 1) * d];
        let kj: &[T] = match same::<K, T>(kj) {
            Some(kj) => kj,
            None => {
                wide.clear();
                wide.extend(kj.iter().map(|&x| x.widen()));
                &wide
            }
        };
        for r in 0..rows {
            s[r * s_rs + j] = T::dot(&q[r * d..(r + 1) * d], kj);
        }
    }
}

/// `o_r += sum_j p[r * p_rs + j] v_j` for `rows` rows of `o` [rows, d] and `kn` values `v`
/// [kn, d].
pub(crate) fn add_weighted<T: Float, K: CacheElem<T>>(
    p: &[T],
    p_rs: usize,
    v: &[K],
    (rows, kn, d): (usize, usize, usize),
    o: &mut [T],
) {
    assert!(
        o.len() >= rows * d
            && v.len() >= kn * d
            && (rows == 0 || p.len() >= (rows - 1) * p_rs + kn),
        "attention outputs: shapes"
    );
    #[cfg(target_arch = "x86_64")]
    if let Some(p) = as_f32(p) {
        if d == 64 && lanes_for::<K>() && std::is_x86_feature_detected!("avx512f") {
            let o = as_f32_mut(o).expect("o has p's type");
            let mut r = 0;
            while r < rows {
                let n = (rows - r).min(3);
                // SAFETY: AVX-512F is present; rows r..r+n of p and o and kn rows of v are in
                // range (asserted above).
                unsafe {
                    match n {
                        3 => avx512::add_weighted::<K, 3>(
                            &p[r * p_rs..],
                            p_rs,
                            v,
                            kn,
                            &mut o[r * 64..],
                        ),
                        2 => avx512::add_weighted::<K, 2>(
                            &p[r * p_rs..],
                            p_rs,
                            v,
                            kn,
                            &mut o[r * 64..],
                        ),
                        _ => avx512::add_weighted::<K, 1>(
                            &p[r * p_rs..],
                            p_rs,
                            v,
                            kn,
                            &mut o[r * 64..],
                        ),
                    }
                }
                r += n;
            }
            return;
        }
    }
    for j in 0..kn {
        let vj = &v[j * d..(j + 1) * d];
        for r in 0..rows {
            let prj = p[r * p_rs + j];
            o[r * d..(r + 1) * d]
                .iter_mut()
                .zip(vj)
                .for_each(|(a, &b)| *a += prj * b.widen());
        }
    }
}

fn as_f32<T: Float>(x: &[T]) -> Option<&[f32]> {
    same::<T, f32>(x)
}

fn as_f32_mut<T: Float>(x: &mut [T]) -> Option<&mut [f32]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        // SAFETY: T is f32 (checked just above).
        .then(|| unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f32>(), x.len()) })
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// 16 elements from `p` as f32 lanes: f32 as they are, bf16 (2-byte `K`) widened exactly
    /// (its bits are the high half of the f32's).
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn load16<K>(p: *const K) -> __m512 {
        // SAFETY: the caller runs with AVX-512F (every caller is an avx512f fn) and `p` valid for
        // 16 elements of K, which `lanes_for` admits only as f32 or 2-byte bf16: 64 or 32
        // bytes read, as the branch on K's size loads.
        unsafe {
            if std::mem::size_of::<K>() == 2 {
                let h = _mm256_loadu_si256(p.cast::<__m256i>());
                _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
            } else {
                _mm512_loadu_ps(p.cast::<f32>())
            }
        }
    }

    /// `out[i] = p[i]` as f32 for the `out.len()` (a multiple of 16) elements at `p`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn widen<K>(p: *const K, out: &mut [f32]) {
        // SAFETY: the caller has AVX-512F and `p` valid for out.len() elements (`scores`: keys
        // j..j+n of k, in range by its assert); chunk i reads elements 16 i..16 i + 16 <=
        // out.len() and writes chunk i of `out`.
        unsafe {
            for (i, o) in out.chunks_exact_mut(16).enumerate() {
                _mm512_storeu_ps(o.as_mut_ptr(), load16(p.add(16 * i)));
            }
        }
    }

    /// The 16 horizontal sums of `a` as one vector: lane i is the sum of a[i]'s lanes.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn sums16(a: &[__m512; 16]) -> __m512 {
        // Pairs of vectors, then pairs of pairs, within each 128-bit quarter...
        let b: [__m512; 8] = std::array::from_fn(|i| {
            let (x, y) = (a[2 * i], a[2 * i + 1]);
            _mm512_add_ps(_mm512_unpacklo_ps(x, y), _mm512_unpackhi_ps(x, y))
        });
        let c: [__m512; 4] = std::array::from_fn(|i| {
            let (u, w) = (_mm512_castps_pd(b[2 * i]), _mm512_castps_pd(b[2 * i + 1]));
            // Moved as 64-bit pairs of floats, added as floats.
            _mm512_add_ps(
                _mm512_castpd_ps(_mm512_unpacklo_pd(u, w)),
                _mm512_castpd_ps(_mm512_unpackhi_pd(u, w)),
            )
        });
        // ...then across the quarters: c[i] holds keys 4i..4i+4 in each quarter.
        let f = _mm512_add_ps(
            _mm512_shuffle_f32x4::<0x88>(c[0], c[1]),
            _mm512_shuffle_f32x4::<0xDD>(c[0], c[1]),
        );
        let g = _mm512_add_ps(
            _mm512_shuffle_f32x4::<0x88>(c[2], c[3]),
            _mm512_shuffle_f32x4::<0xDD>(c[2], c[3]),
        );
        _mm512_add_ps(
            _mm512_shuffle_f32x4::<0x88>(f, g),
            _mm512_shuffle_f32x4::<0xDD>(f, g),
        )
    }

    /// s[j] = q . k_j for j < kn, head width 64.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn scores_row<K>(q: &[f32], k: &[K], kn: usize, s: &mut [f32]) {
        // SAFETY: the caller has AVX-512F and q holds 64 floats, k kn rows of 64 and s kn scores
        // (`scores`'s asserts): key row j + jj < kn is read at columns 0, 16, 32 and 48,
        // and the masked store writes scores j..j + n <= kn.
        unsafe {
            let qv: [__m512; 4] = std::array::from_fn(|v| _mm512_loadu_ps(q.as_ptr().add(16 * v)));
            let mut j = 0;
            while j < kn {
                let n = (kn - j).min(16);
                let mut acc = [_mm512_setzero_ps(); 16];
                for (jj, a) in acc.iter_mut().enumerate().take(n) {
                    let kj = k.as_ptr().add((j + jj) * 64);
                    let mut x = _mm512_mul_ps(qv[0], load16(kj));
                    x = _mm512_fmadd_ps(qv[1], load16(kj.add(16)), x);
                    x = _mm512_fmadd_ps(qv[2], load16(kj.add(32)), x);
                    *a = _mm512_fmadd_ps(qv[3], load16(kj.add(48)), x);
                }
                let mask = ((1u32 << n) - 1) as __mmask16;
                _mm512_mask_storeu_ps(s.as_mut_ptr().add(j), mask, sums16(&acc));
                j += n;
            }
        }
    }

    /// o_r += sum_j p[r * p_rs + j] v_j for R rows, head width 64: the R output rows stay in
    /// registers while each value row is loaded once.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn add_weighted<K, const R: usize>(
        p: &[f32],
        p_rs: usize,
        v: &[K],
        kn: usize,
        o: &mut [f32],
    ) {
        // SAFETY: the caller has AVX-512F, p holds R rows of stride p_rs with kn weights each, v kn
        // rows of 64 and o R rows of 64 (the outer `add_weighted`'s asserts): the loads and stores of o
        // touch row r < R at columns c * 16 < 64, value row j < kn is read at the same
        // columns, and weight r * p_rs + j is inside p.
        unsafe {
            let mut acc: [[__m512; 4]; R] = std::array::from_fn(|r| {
                std::array::from_fn(|c| _mm512_loadu_ps(o.as_ptr().add(r * 64 + 16 * c)))
            });
            for j in 0..kn {
                let vj: [__m512; 4] =
                    std::array::from_fn(|c| load16(v.as_ptr().add(j * 64 + 16 * c)));
                for (r, a) in acc.iter_mut().enumerate() {
                    let pb = _mm512_set1_ps(*p.get_unchecked(r * p_rs + j));
                    for c in 0..4 {
                        a[c] = _mm512_fmadd_ps(pb, vj[c], a[c]);
                    }
                }
            }
            for (r, a) in acc.iter().enumerate() {
                for (c, a) in a.iter().enumerate() {
                    _mm512_storeu_ps(o.as_mut_ptr().add(r * 64 + 16 * c), *a);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0) * 0.8)
            .collect()
    }

    #[test]
    fn scores_and_outputs_match_f64_sums() {
        // Head widths on the AVX-512 path (64) and off it (24); key counts around 16; row
        // counts around the 3 kept in registers.
        for &(rows, kn, d) in &[
            (3, 37, 64),
            (1, 16, 64),
            (5, 1, 64),
            (4, 170, 64),
            (2, 9, 24),
        ] {
            let (q, k, v) = (data(rows * d, 1), data(kn * d, 2), data(kn * d, 3));
            let s_rs = kn + 3;
            let mut s = vec![f32::NAN; (rows - 1) * s_rs + kn];
            scores(&q, &k, (rows, kn, d), &mut s, s_rs);
            for r in 0..rows {
                for j in 0..kn {
                    let want: f64 = (0..d)
                        .map(|c| f64::from(q[r * d + c]) * f64::from(k[j * d + c]))
                        .sum();
                    let got = f64::from(s[r * s_rs + j]);
                    assert!(
                        (got - want).abs() < 1e-5 * (1.0 + want.abs()),
                        "s[{r},{j}] {got} {want}"
                    );
                }
            }
            let p = data(rows * kn, 4);
            let o0 = data(rows * d, 5);
            let mut o = o0.clone();
            add_weighted(&p, kn, &v, (rows, kn, d), &mut o);
            for r in 0..rows {
                for c in 0..d {
                    let want = f64::from(o0[r * d + c])
                        + (0..kn)
                            .map(|j| f64::from(p[r * kn + j]) * f64::from(v[j * d + c]))
                            .sum::<f64>();
                    let got = f64::from(o[r * d + c]);
                    assert!(
                        (got - want).abs() < 1e-5 * (1.0 + want.abs()),
                        "o[{r},{c}] {got} {want}"
                    );
                }
            }
        }
    }

    /// bf16 keys and values give, bit for bit, what f32 ones holding the same (rounded) values
    /// give: on the AVX-512 kernels (width 64) and the loops (width 24).
    #[test]
    fn bf16_keys_and_values_equal_their_f32_widening_bit_for_bit() {
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for &(rows, kn, d) in &[(3, 37, 64), (4, 170, 64), (1, 5, 64), (2, 9, 24)] {
            let q = data(rows * d, 1);
            let (kb, vb): (Vec<half::bf16>, Vec<half::bf16>) = (
                data(kn * d, 2)
                    .into_iter()
                    .map(half::bf16::from_f32)
                    .collect(),
                data(kn * d, 3)
                    .into_iter()
                    .map(half::bf16::from_f32)
                    .collect(),
            );
            let (kf, vf): (Vec<f32>, Vec<f32>) = (
                kb.iter().map(|x| x.to_f32()).collect(),
                vb.iter().map(|x| x.to_f32()).collect(),
            );
            let (mut sb, mut sf) = (vec![0f32; rows * kn], vec![0f32; rows * kn]);
            scores(&q, &kb, (rows, kn, d), &mut sb, kn);
            scores(&q, &kf, (rows, kn, d), &mut sf, kn);
            assert_eq!(bits(&sb), bits(&sf), "scores {rows}x{kn}x{d}");
            let o0 = data(rows * d, 5);
            let (mut ob, mut of) = (o0.clone(), o0);
            add_weighted(&sf, kn, &vb, (rows, kn, d), &mut ob);
            add_weighted(&sf, kn, &vf, (rows, kn, d), &mut of);
            assert_eq!(bits(&ob), bits(&of), "outputs {rows}x{kn}x{d}");
        }
    }

    #[test]
    fn f64_takes_the_loops_with_the_same_meaning() {
        let (rows, kn, d) = (2, 5, 64);
        let q: Vec<f64> = data(rows * d, 1).into_iter().map(f64::from).collect();
        let k: Vec<f64> = data(kn * d, 2).into_iter().map(f64::from).collect();
        let mut s = vec![0f64; rows * kn];
        scores(&q, &k, (rows, kn, d), &mut s, kn);
        let want: f64 = (0..d).map(|c| q[d + c] * k[3 * d + c]).sum();
        assert!((s[kn + 3] - want).abs() < 1e-12);
    }
}
