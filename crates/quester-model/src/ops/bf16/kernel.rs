//! One row block of A (bf16 pairs) against one panel of 48 columns, on the kernel asked for:
//! AMX tiles, AVX512-BF16 register tiles of 8, 4, 2, 1 rows, or the portable loop.

use super::panels::PANEL;
use super::Bf16Kernel;
use crate::ops::tiles::{row_tiles, TILE_ROWS};

/// One product of a sum `y = A1 . B1 + A2 . B2 + ...`: `rows` rows of A as `kp` pairs each
/// against one panel of B (kp * 48 pairs).
#[derive(Clone, Copy)]
pub(super) struct Segment<'a> {
    pub(super) a: &'a [u32],
    pub(super) kp: usize,
    pub(super) panel: &'a [u32],
}

/// y[r, c] = sum over the segments and their pairs q of a[r][q] . panel[q][c] for `rows`
/// rows, one accumulation per output over the segments in order (a sum of products in one
/// pass, so the second product adds into the first's accumulators instead of into memory).
///
/// # Safety
/// `kernel` is available; at least one segment has `kp` > 0; each segment's `a` holds `rows`
/// rows of its `kp` pairs (rounded up to the kernel's [`Bf16Kernel::row_step`], and `kp` its
/// [`Bf16Kernel::pair_stride`]) and its `panel` kp * 48 pairs; `(y, ys, cols)`: `y` points at
/// column 0 of the panel in row 0 of an output of row stride `ys`, valid for `rows` rows and
/// `cols` <= 48 columns.
pub(super) unsafe fn panel_product(
    kernel: Bf16Kernel,
    rows: usize,
    segs: &[Segment],
    (y, ys, cols): (*mut f32, usize, usize),
) {
    // SAFETY: the kernel called is available and the segments and (y, ys, cols) are laid out for it
    // (this fn's contract, which is the contracts of `amx::panel_product` and
    // `avx512::tile`); the AVX512-BF16 tiles cover rows r..r+n of `row_tiles(rows)`, so y +
    // r * ys is inside the output; the portable loop writes `cols` floats of row r < rows.
    unsafe {
        debug_assert!(cols <= PANEL && segs.iter().any(|g| g.kp > 0));
        debug_assert!(segs
            .iter()
            .all(|g| g.a.len() >= rows * g.kp && g.panel.len() >= g.kp * PANEL));
        #[cfg(target_arch = "x86_64")]
        {
            if kernel == Bf16Kernel::Amx {
                super::amx::panel_product(rows, segs, y, ys, cols);
                return;
            }
            if kernel == Bf16Kernel::Avx512Bf16 {
                for (i, pass) in passes(segs).enumerate() {
                    let load = i > 0;
                    for (r, n) in row_tiles(rows) {
                        let yr = y.add(r * ys);
                        match n {
                            TILE_ROWS => avx512::tile::<TILE_ROWS>(r, &pass, (yr, ys, cols), load),
                            4 => avx512::tile::<4>(r, &pass, (yr, ys, cols), load),
                            2 => avx512::tile::<2>(r, &pass, (yr, ys, cols), load),
                            _ => avx512::tile::<1>(r, &pass, (yr, ys, cols), load),
                        }
                    }
                }
                return;
            }
        }
        for r in 0..rows {
            portable_row(r, segs, y.add(r * ys), cols);
        }
    }
}

/// Pairs of k per pass over a row block, on either kernel: the panel's slice (512 x 48 pairs,
/// 96 KiB) stays in L2 while every tile of the block multiplies against it. Without it the
/// output head's backward (k = 49,152: 4.7 MiB panels) read a panel from memory once per tile.
pub(super) const K_CHUNK: usize = 512;

/// The pairs `q` of one segment that one pass multiplies.
pub(super) struct Part<'a> {
    pub(super) seg: &'a Segment<'a>,
    pub(super) q: std::ops::Range<usize>,
}

/// One pass over a row block: a chunk of a segment, and a short segment riding along.
pub(super) struct Pass<'a> {
    pub(super) chunk: Part<'a>,
    pub(super) rider: Option<Part<'a>>,
}

impl<'a> Pass<'a> {
    pub(super) fn parts(&self) -> impl Iterator<Item = &Part<'a>> {
        std::iter::once(&self.chunk).chain(self.rider.as_ref())
    }
}

/// The passes of a sum of products: each segment in k chunks of [`K_CHUNK`], in order; a short
/// segment (a LoRA rank) after a non-empty one rides along with that one's last chunk, so it
/// adds into the accumulators before they are stored. Each output is still one chain over the
/// segments' k in order (a pass after the first resumes from the stored f32 sums, exactly), so
/// the bits do not depend on the chunking.
pub(super) fn passes<'a>(segs: &'a [Segment<'a>]) -> impl Iterator<Item = Pass<'a>> + 'a {
    let (mut i, mut q0) = (0, 0);
    std::iter::from_fn(move || {
        while segs.get(i).is_some_and(|g| q0 >= g.kp) {
            let rode = segs[i].kp > 0 && rides(segs, i);
            i += if rode { 2 } else { 1 };
            q0 = 0;
        }
        let g = segs.get(i)?;
        let q = q0..(q0 + K_CHUNK).min(g.kp);
        q0 = q.end;
        let rider = (q.end == g.kp && rides(segs, i)).then(|| Part {
            seg: &segs[i + 1],
            q: 0..segs[i + 1].kp,
        });
        Some(Pass {
            chunk: Part { seg: g, q },
            rider,
        })
    })
}

/// Whether segment i + 1 rides along with segment i's last chunk.
fn rides(segs: &[Segment], i: usize) -> bool {
    segs.get(i + 1).is_some_and(|r| r.kp > 0 && r.kp <= K_CHUNK)
}

/// The two halves of a pair as f32 (a bf16 is the top half of an f32).
fn halves(p: u32) -> (f32, f32) {
    (f32::from_bits(p << 16), f32::from_bits(p & 0xffff_0000))
}

/// Row `r` of each segment against its panel without the instruction: the same pair products
/// (exact in f32) added in the same order over the segments and their k.
///
/// # Safety
/// `y` is valid for `cols` writes; each segment holds row `r`.
pub(super) unsafe fn portable_row(r: usize, segs: &[Segment], y: *mut f32, cols: usize) {
    // SAFETY: `y` is valid for `cols` writes (this fn's contract) and `acc` holds 48 >= cols
    // floats; a local array and an output buffer cannot overlap.
    unsafe {
        let mut acc = [0f32; PANEL];
        for g in segs {
            let a = &g.a[r * g.kp..(r + 1) * g.kp];
            for (&ap, w) in a.iter().zip(g.panel.chunks_exact(PANEL)) {
                let (a0, a1) = halves(ap);
                for (s, &wp) in acc.iter_mut().zip(w) {
                    let (w0, w1) = halves(wp);
                    *s = *s + a1 * w1 + a0 * w0;
                }
            }
        }
        std::ptr::copy_nonoverlapping(acc.as_ptr(), y, cols);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Part, Pass, PANEL};
    use std::arch::x86_64::*;

    /// `R` rows (from row `r0` of each segment) against one panel: R x 3 accumulators, one
    /// `vdpbf16ps` chain over the pass's pairs per output, started from zero or, with `load`,
    /// from the sums an earlier pass stored in `y`.
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX512-BF16; each part's segment holds rows r0..r0+R of its
    /// `kp` pairs and kp * 48 pairs of panel, its `q` within 0..kp; `y` is valid for `cols`
    /// (<= 48) reads and writes in each of R rows of stride `ys`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn tile<const R: usize>(
        r0: usize,
        pass: &Pass,
        (y, ys, cols): (*mut f32, usize, usize),
        load: bool,
    ) {
        // SAFETY: the CPU features, the parts' rows and pairs and the `cols` <= 48 reads and writes
        // in R rows of `y` are this fn's contract, which is what `load_tile`, `chain` and
        // `store_tile` need.
        unsafe {
            debug_assert!(cols <= PANEL);
            let mut acc = if load {
                crate::ops::tiles::avx512::load_tile::<R>(y, ys, cols)
            } else {
                [[_mm512_setzero_ps(); 3]; R]
            };
            for p in pass.parts() {
                acc = chain::<R>(acc, r0, p);
            }
            crate::ops::tiles::avx512::store_tile(&acc, y, ys, cols);
        }
    }

    /// One part's `vdpbf16ps` chains added to `acc`. A function of its own, taking and
    /// returning the accumulators by value, so they stay in registers over the loop: written
    /// inline in `tile`'s loop over segments, LLVM kept them in memory and stored all 24 after
    /// every product, which capped the kernel at one product a cycle (half of Zen 5's rate).
    ///
    /// # Safety
    /// As [`tile`], for this one part.
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn chain<const R: usize>(
        mut acc: [[__m512; 3]; R],
        r0: usize,
        p: &Part,
    ) -> [[__m512; 3]; R] {
        // SAFETY: as `tile` (this fn's contract): rows r0..r0+R of `kp` pairs are in `a` and pairs
        // q < kp of the panel's kp * 48 in `panel`, so every read is inside the segment;
        // the transmutes reinterpret 512 bits of bf16 pairs as the same 512 bits of
        // __m512bh.
        unsafe {
            let (g, kp) = (p.seg, p.seg.kp);
            debug_assert!(p.q.end <= kp);
            debug_assert!(g.a.len() >= (r0 + R) * kp && g.panel.len() >= kp * PANEL);
            let (ap, wp) = (g.a.as_ptr().add(r0 * kp), g.panel.as_ptr());
            for q in p.q.clone() {
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
            acc
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{passes, Segment, K_CHUNK};

    /// Each pass as (segment index, pairs) for segments of these k.
    fn plan(kps: &[usize]) -> Vec<Vec<(usize, std::ops::Range<usize>)>> {
        let (a, panel) = (vec![0u32; 4096], vec![0u32; 4096 * 48]);
        let segs: Vec<Segment> = kps
            .iter()
            .map(|&kp| Segment {
                a: &a[..kp],
                kp,
                panel: &panel[..kp * 48],
            })
            .collect();
        let index = |g: &Segment| segs.iter().position(|s| std::ptr::eq(s, g)).unwrap();
        passes(&segs)
            .map(|p| p.parts().map(|x| (index(x.seg), x.q.clone())).collect())
            .collect()
    }

    #[test]
    fn k_comes_in_chunks_and_a_short_segment_rides_with_the_last() {
        assert_eq!(K_CHUNK, 512);
        assert_eq!(plan(&[288]), [vec![(0, 0..288)]]);
        assert_eq!(plan(&[288, 8]), [vec![(0, 0..288), (1, 0..8)]]);
        assert_eq!(
            plan(&[1200, 8]),
            [
                vec![(0, 0..512)],
                vec![(0, 512..1024)],
                vec![(0, 1024..1200), (1, 0..8)]
            ]
        );
        // A segment too long to ride runs its own chunks; an empty one runs none.
        assert_eq!(
            plan(&[300, 600]),
            [vec![(0, 0..300)], vec![(1, 0..512)], vec![(1, 512..600)]]
        );
        assert_eq!(plan(&[0, 8]), [vec![(1, 0..8)]]);
        assert_eq!(plan(&[512, 512]), [vec![(0, 0..512), (1, 0..512)]]);
    }
}
