//! A right-hand matrix packed as bf16 pairs in panels, and products against it.

use super::convert::{bf16_bits, convert, interleave};
use super::kernel::{panel_product, Segment, K_CHUNK};
use super::rows::{Bf16Rows, RowBlock};
use super::Bf16Kernel;
use crate::ops::tiles::{SharedOut, TILE_ROWS};
use candle_core::{bail, Result};
use rayon::prelude::*;

/// Output columns per panel: three vectors of 16 f32 lanes.
pub(crate) const PANEL: usize = 48;

/// Below this many multiply-adds a product runs on the calling thread.
const PAR_MIN_FLOPS: usize = 1 << 16;

/// Bytes of A one row block keeps hot while every panel of the task streams past it.
const BLOCK_BYTES: usize = 128 << 10;

/// A matrix B [n, k], used as `y = A . B^T`, rounded to bf16 and packed for one kernel: panel
/// p holds columns p*48..p*48+48 as [kp][48] pairs of consecutive k (zero past n and past k),
/// kp the kernel's [`Bf16Kernel::pair_stride`].
#[derive(Debug, Clone)]
pub struct Bf16Panels {
    n: usize,
    k: usize,
    kp: usize,
    kernel: Bf16Kernel,
    data: Vec<u32>,
}

/// Where element (row, col) of a matrix lies in a slice: `row * rs + col * cs`.
pub type Strides = (usize, usize);

fn check_bounds(
    what: &str,
    len: usize,
    (rows, cols): (usize, usize),
    (rs, cs): Strides,
) -> Result<()> {
    if rows > 0 && cols > 0 && (rows - 1) * rs + (cols - 1) * cs >= len {
        bail!(
            "bf16 matmul: {what} [{rows}, {cols}] with strides ({rs}, {cs}) overruns {len} values"
        );
    }
    Ok(())
}

impl Bf16Panels {
    /// Packs B [n, k] whose element (j, kk) is `src[j * rs + kk * cs]`: (k, 1) for a row-major
    /// weight W [out, in] in `x W^T`, (1, n) for the transpose of a row-major [k, n] matrix.
    /// Products run on [`Bf16Kernel::best`].
    pub fn pack(src: &[f32], dims: (usize, usize), strides: Strides) -> Result<Self> {
        Self::pack_for(Bf16Kernel::best(), src, dims, strides)
    }

    /// [`Self::pack`] for a given kernel; an unavailable one is an error.
    pub fn pack_for(
        kernel: Bf16Kernel,
        src: &[f32],
        (n, k): (usize, usize),
        (rs, cs): Strides,
    ) -> Result<Self> {
        if !kernel.available() {
            bail!(
                "bf16 matmul: the {} kernel does not run on this CPU",
                kernel.name()
            );
        }
        check_bounds("B", src.len(), (n, k), (rs, cs))?;
        let kp = kernel.pair_stride(k);
        let mut data = super::pool::take(n.div_ceil(PANEL) * kp * PANEL);
        if kp > 0 {
            data.par_chunks_mut(kp * PANEL)
                .enumerate()
                .for_each(|(p, panel)| pack_panel(src, (n, k), (rs, cs), p, panel));
        }
        Ok(Bf16Panels {
            n,
            k,
            kp,
            kernel,
            data,
        })
    }

    /// The kernel the products run on.
    pub fn kernel(&self) -> Bf16Kernel {
        self.kernel
    }

    /// Packs a row-major weight W [out, in] for `x W^T`.
    pub fn pack_rows(w: &[f32], out: usize, inp: usize) -> Result<Self> {
        if w.len() != out * inp {
            bail!(
                "bf16 matmul: {} weights for a [{out}, {inp}] matrix",
                w.len()
            );
        }
        Self::pack(w, (out, inp), (inp, 1))
    }

    /// Columns of the product (rows of B).
    pub fn n(&self) -> usize {
        self.n
    }

    /// The shared dimension.
    pub fn k(&self) -> usize {
        self.k
    }

    /// y [m, n] = A [m, k] . B^T for a row-major A.
    pub fn matmul(&self, a: &[f32], m: usize) -> Result<Vec<f32>> {
        self.matmul_strided(a, m, (self.k, 1))
    }

    /// y [m, n] = A [m, k] . B^T, element (i, kk) of A at `a[i * rs + kk * cs]`.
    pub fn matmul_strided(&self, a: &[f32], m: usize, strides: Strides) -> Result<Vec<f32>> {
        self.product(a, m, strides, None)
    }

    /// y [m, n] = A [m, k] . B^T + A2 [m, k2] . B2^T for row-major A and A2, with `b2` packed
    /// for the same n and kernel: both products accumulate into the same f32 sums, one pass
    /// over y (a LoRA projection's base and low-rank update together).
    pub fn matmul_plus(
        &self,
        a: &[f32],
        m: usize,
        (b2, a2): (&Bf16Panels, &[f32]),
    ) -> Result<Vec<f32>> {
        if b2.n != self.n || b2.kernel != self.kernel {
            bail!(
                "bf16 matmul: a second product of {} columns on {} against {} on {}",
                b2.n,
                b2.kernel.name(),
                self.n,
                self.kernel.name()
            );
        }
        check_bounds("A2", a2.len(), (m, b2.k), (b2.k, 1))?;
        self.product(a, m, (self.k, 1), Some((b2, a2)))
    }

    /// y [m, n] = A . B^T (+ A2 . B2^T) for an A converted once beforehand (and shared, or
    /// converted together with other work on its rows: [`Bf16Rows::convert_then`]); the bits of
    /// [`Self::matmul`] / [`Self::matmul_plus`] on the same values.
    pub fn matmul_rows(
        &self,
        a: &Bf16Rows,
        second: Option<(&Bf16Panels, &Bf16Rows)>,
    ) -> Result<Vec<f32>> {
        self.check_rows("A", a, self)?;
        if let Some((b2, a2)) = second {
            self.check_rows("A2", a2, b2)?;
            if b2.n != self.n || a2.m() != a.m() {
                bail!(
                    "bf16 matmul: a second product of {} columns and {} rows against {} and {}",
                    b2.n,
                    a2.m(),
                    self.n,
                    a.m()
                );
            }
        }
        let second = second.map(|(b2, a2)| (b2, a2.pairs()));
        Ok(self.product_pairs(a.pairs(), a.m(), second))
    }

    /// Whether `rows` were converted for products against `b` (same k and kernel).
    fn check_rows(&self, what: &str, rows: &Bf16Rows, b: &Bf16Panels) -> Result<()> {
        if rows.k() != b.k || rows.kernel() != b.kernel || rows.kernel() != self.kernel {
            bail!(
                "bf16 matmul: {what} of {} columns converted for {}, against {} on {}",
                rows.k(),
                rows.kernel().name(),
                b.k,
                b.kernel.name()
            );
        }
        Ok(())
    }

    fn product(
        &self,
        a: &[f32],
        m: usize,
        strides: Strides,
        second: Option<(&Bf16Panels, &[f32])>,
    ) -> Result<Vec<f32>> {
        let (k, kp, kernel) = (self.k, self.kp, self.kernel);
        check_bounds("A", a.len(), (m, k), strides)?;
        let padded = m.div_ceil(kernel.row_step()) * kernel.row_step();
        let pairs = to_pairs(a, (m, k), strides, (padded, kp), &|_, _, _| {});
        let pairs2 = second
            .map(|(b2, a2)| to_pairs(a2, (m, b2.k), (b2.k, 1), (padded, b2.kp), &|_, _, _| {}));
        let y = self.product_pairs(
            &pairs,
            m,
            second.zip(pairs2.as_deref()).map(|((b2, _), p2)| (b2, p2)),
        );
        super::pool::give(pairs);
        if let Some(p2) = pairs2 {
            super::pool::give(p2);
        }
        Ok(y)
    }

    /// The product of A's pairs (rows padded to the kernel's row step, `kp` pairs a row) and
    /// optionally a second product's, against these panels.
    fn product_pairs(
        &self,
        pairs: &[u32],
        m: usize,
        second: Option<(&Bf16Panels, &[u32])>,
    ) -> Vec<f32> {
        let (n, k, kp, kernel) = (self.n, self.k, self.kp, self.kernel);
        let second = second.filter(|(b2, _)| b2.k > 0);
        if m == 0 || n == 0 || (k == 0 && second.is_none()) {
            return vec![0f32; m * n];
        }
        // Every element is written below (each task its rows and panels, together all of
        // them), so the output is not zeroed first: that pass cost as much as a small product.
        let mut y: Vec<f32> = Vec::with_capacity(m * n);
        let step = kernel.row_step();
        let panels = n.div_ceil(PANEL);
        // Row blocks: AMX's is fixed (it chunks k itself); the register tiles' keep their
        // pairs in cache while a task's panels stream past them, in whole tiles of 8 rows.
        let block = match kernel {
            Bf16Kernel::Amx => super::amx::BLOCK_ROWS,
            _ => (BLOCK_BYTES / (4 * kp.clamp(1, K_CHUNK))).max(TILE_ROWS) / TILE_ROWS * TILE_ROWS,
        };
        let blocks = m.div_ceil(block);
        let threads = rayon::current_num_threads();
        let y_ptr = SharedOut(y.as_mut_ptr());
        let run = |rb: usize, ps: std::ops::Range<usize>| {
            let r0 = rb * block;
            let rows = (m - r0).min(block);
            let end = (r0 + rows).div_ceil(step) * step;
            for p in ps {
                let cols = (n - p * PANEL).min(PANEL);
                let first = Segment {
                    a: &pairs[r0 * kp..end * kp],
                    kp,
                    panel: &self.data[p * kp * PANEL..(p + 1) * kp * PANEL],
                };
                let both;
                let segs: &[Segment] = match second {
                    Some((b2, p2)) => {
                        let kp2 = b2.kp;
                        both = [
                            first,
                            Segment {
                                a: &p2[r0 * kp2..end * kp2],
                                kp: kp2,
                                panel: &b2.data[p * kp2 * PANEL..(p + 1) * kp2 * PANEL],
                            },
                        ];
                        &both
                    }
                    None => std::slice::from_ref(&first),
                };
                // SAFETY: the kernel is available (checked at packing) and the pairs are laid
                // out for it (both operands packed for the same kernel, rows padded to its
                // step); a segment has k > 0 (checked above); this task writes rows
                // r0..r0+rows, columns p*48..p*48+cols of y (m x n); no two tasks share a
                // (row block, panel).
                unsafe {
                    panel_product(kernel, rows, segs, (y_ptr.at(r0 * n + p * PANEL), n, cols));
                };
            }
        };
        let k_all = k + second.map_or(0, |(b2, _)| b2.k);
        if threads > 1 && m * n * k_all >= PAR_MIN_FLOPS {
            // A few tasks per thread, so an uneven split still keeps every core busy.
            let per = (panels * blocks)
                .div_ceil(threads * 4)
                .div_ceil(blocks)
                .max(1);
            let groups = panels.div_ceil(per);
            (0..blocks * groups).into_par_iter().for_each(|t| {
                let (rb, g) = (t / groups, t % groups);
                run(rb, g * per..((g + 1) * per).min(panels));
            });
        } else {
            for rb in 0..blocks {
                run(rb, 0..panels);
            }
        }
        // SAFETY: the tasks above wrote all m x n elements (every row block against every
        // panel, each kernel storing all `rows` x `cols` of its part).
        unsafe { y.set_len(m * n) };
        y
    }

    /// y [rows, n] = A . B^T for one block of converted rows (a [`Bf16Rows::convert_then`]
    /// hook's), on the calling thread: a rank-r factor's product riding on the conversion of
    /// the activation it reads. Every element of `y[..rows * n]` is written.
    pub fn product_block(&self, a: RowBlock<'_>, rows: usize, y: &mut [f32]) -> Result<()> {
        let (n, kp, step) = (self.n, self.kp, self.kernel.row_step());
        if a.k != self.k || a.kernel != self.kernel {
            bail!(
                "bf16 matmul: a block of {} columns converted for {}, against {} on {}",
                a.k,
                a.kernel.name(),
                self.k,
                self.kernel.name()
            );
        }
        let end = rows.div_ceil(step) * step;
        if a.pairs.len() < end * kp || y.len() < rows * n {
            bail!(
                "bf16 matmul: a block of {} pairs for {rows} rows of {kp}, or {} outputs for \
                 [{rows}, {n}]",
                a.pairs.len(),
                y.len()
            );
        }
        if rows == 0 || n == 0 {
            return Ok(());
        }
        if kp == 0 {
            y[..rows * n].fill(0.0);
            return Ok(());
        }
        for p in 0..n.div_ceil(PANEL) {
            let seg = Segment {
                a: &a.pairs[..end * kp],
                kp,
                panel: &self.data[p * kp * PANEL..(p + 1) * kp * PANEL],
            };
            let cols = (n - p * PANEL).min(PANEL);
            // SAFETY: both were laid out for this kernel (checked), which is available (checked
            // at packing); the block holds `rows` rows padded to the row step with kp > 0 pairs
            // each and the panel kp * 48 pairs; y holds rows x n (checked), of which this
            // writes columns p*48..p*48+cols.
            unsafe {
                panel_product(
                    self.kernel,
                    rows,
                    std::slice::from_ref(&seg),
                    (y.as_mut_ptr().add(p * PANEL), n, cols),
                );
            };
        }
        Ok(())
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len() * 4
    }
}

impl Drop for Bf16Panels {
    fn drop(&mut self) {
        super::pool::give(std::mem::take(&mut self.data));
    }
}

/// Panel `p` of B: columns p*48.. as [kp][48] pairs, zero past n and past k (`panel` may hold
/// stale values: every element is written).
pub(super) fn pack_panel(
    src: &[f32],
    (n, k): (usize, usize),
    (rs, cs): Strides,
    p: usize,
    panel: &mut [u32],
) {
    let kp = panel.len() / PANEL;
    let c0 = p * PANEL;
    let cols = (n - c0).min(PANEL);
    let half = k.div_ceil(2);
    panel[half * PANEL..].fill(0);
    if cols < PANEL {
        for row in panel[..half * PANEL].chunks_exact_mut(PANEL) {
            row[cols..].fill(0);
        }
    }
    if cs == 1 {
        // Each column of the panel is a contiguous row of the source: convert it whole.
        let mut row = vec![0u16; 2 * kp];
        for c in 0..cols {
            let j = c0 + c;
            convert(&src[j * rs..j * rs + k], &mut row[..k]);
            for q in 0..k.div_ceil(2) {
                panel[q * PANEL + c] = u32::from(row[2 * q]) | u32::from(row[2 * q + 1]) << 16;
            }
        }
    } else if rs == 1 {
        // Each k of the panel is a contiguous run of the source: two runs make a row of pairs.
        for q in 0..k.div_ceil(2) {
            let run = |kk: usize| &src[kk * cs + c0..kk * cs + c0 + cols];
            let hi = (2 * q + 1 < k).then(|| run(2 * q + 1));
            interleave(run(2 * q), hi, &mut panel[q * PANEL..q * PANEL + cols]);
        }
    } else {
        for c in 0..cols {
            for q in 0..k.div_ceil(2) {
                let at = |kk: usize| {
                    if kk < k {
                        bf16_bits(src[(c0 + c) * rs + kk * cs])
                    } else {
                        0
                    }
                };
                panel[q * PANEL + c] = u32::from(at(2 * q)) | u32::from(at(2 * q + 1)) << 16;
            }
        }
    }
}

/// Rows per task of [`to_pairs`]: a task's rows of pairs (and of A) stay in cache while it fills
/// them and runs its hook on them.
pub(super) const CHUNK_ROWS: usize = 64;

/// A [m, k] as rows of bf16 pairs [padded][kp], kp >= ceil(k/2) (zeros pad k and the rows).
/// `then(i0, rows, pairs)` runs on the task that converted rows `i0..i0 + rows` (blocks of
/// [`CHUNK_ROWS`]) right after it did, with those rows' pairs (from row i0 on, `kp` a row, the
/// padding rows of the last block included; empty when kp is 0).
pub(super) fn to_pairs(
    a: &[f32],
    (m, k): (usize, usize),
    (rs, cs): Strides,
    (padded, kp): (usize, usize),
    then: &(dyn Fn(usize, usize, &[u32]) + Sync),
) -> Vec<u32> {
    // Stale values: each task zeroes the padding of its rows (pairs past k, rows past m) and
    // writes the rest.
    let mut pairs = super::pool::take(padded * kp);
    let rows_per = CHUNK_ROWS;
    if kp == 0 {
        for i0 in (0..m).step_by(rows_per) {
            then(i0, (m - i0).min(rows_per), &[]);
        }
        return pairs;
    }
    let parallel = m * k >= 1 << 16;
    let half = k.div_ceil(2);
    let fill = |(c, chunk): (usize, &mut [u32])| {
        let i0 = c * rows_per;
        let rows = chunk.len() / kp;
        let rows = rows.min(m.saturating_sub(i0));
        chunk[rows * kp..].fill(0);
        if half < kp {
            for row in chunk[..rows * kp].chunks_exact_mut(kp) {
                row[half..].fill(0);
            }
        }
        if cs == 1 {
            for (di, dst) in chunk.chunks_exact_mut(kp).take(rows).enumerate() {
                let i = i0 + di;
                // A pair is two consecutive bf16, low first: a row of pairs is the row's bf16
                // values in order, so convert straight into it.
                // SAFETY: `dst` holds kp u32, i.e. 2 * kp >= k u16, and u16 needs less
                // alignment than u32.
                let halves = unsafe {
                    std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u16>(), 2 * kp)
                };
                convert(&a[i * rs..i * rs + k], &mut halves[..k]);
                if k % 2 == 1 {
                    // The last pair's upper half (the buffer may hold a stale value there).
                    halves[k] = 0;
                }
            }
        } else if rs == 1 {
            // A is the transpose of a row-major matrix (a weight gradient's g^T): each k is a
            // contiguous run over the rows. Whole 16 x 16 tiles of pairs go through registers
            // (one cache line of each source row in, one of each row of pairs out); the rest,
            // one column of pairs at a time.
            let (tile_rows, tile_pairs) = transposed_tiles(a, cs, (i0, rows), k, chunk, kp);
            let mut run = vec![0u32; rows];
            for q in 0..k.div_ceil(2) {
                // Rows already filled for this pair by the tiles.
                let from = if q < tile_pairs { tile_rows } else { 0 };
                if from == rows {
                    continue;
                }
                let lo = &a[2 * q * cs + i0 + from..2 * q * cs + i0 + rows];
                let hi = (2 * q + 1 < k)
                    .then(|| &a[(2 * q + 1) * cs + i0 + from..(2 * q + 1) * cs + i0 + rows]);
                let run = &mut run[..rows - from];
                interleave(lo, hi, run);
                for (di, &v) in run.iter().enumerate() {
                    chunk[(from + di) * kp + q] = v;
                }
            }
        } else {
            for di in 0..rows {
                let i = i0 + di;
                for q in 0..k.div_ceil(2) {
                    let at = |kk: usize| {
                        if kk < k {
                            bf16_bits(a[i * rs + kk * cs])
                        } else {
                            0
                        }
                    };
                    chunk[di * kp + q] = u32::from(at(2 * q)) | u32::from(at(2 * q + 1)) << 16;
                }
            }
        }
        if rows > 0 {
            then(i0, rows, chunk);
        }
    };
    if parallel {
        pairs
            .par_chunks_mut(rows_per * kp)
            .enumerate()
            .for_each(fill);
    } else {
        pairs.chunks_mut(rows_per * kp).enumerate().for_each(fill);
    }
    pairs
}

/// Fills the whole 16-row, 16-pair tiles of a transposed A's rows `i0..i0 + rows` (element (i,
/// kk) at `a[i + kk * cs]`) into `chunk` (rows of `kp` pairs) where the CPU has AVX512-BF16, and
/// returns how many rows and pairs they cover (both 0 elsewhere); values are those of
/// [`interleave`].
fn transposed_tiles(
    a: &[f32],
    cs: usize,
    (i0, rows): (usize, usize),
    k: usize,
    chunk: &mut [u32],
    kp: usize,
) -> (usize, usize) {
    // Only pairs whose both halves exist (an odd k's last pair is left to the caller).
    let (tile_rows, tile_pairs) = (rows / 16 * 16, k / 2 / 16 * 16);
    #[cfg(target_arch = "x86_64")]
    if super::has_bf16_kernel() && tile_rows > 0 && tile_pairs > 0 {
        assert!((2 * tile_pairs - 1) * cs + i0 + tile_rows <= a.len());
        assert!((tile_rows - 1) * kp + tile_pairs <= chunk.len());
        // SAFETY: the CPU has AVX-512F and AVX512-BF16 (checked); the asserts bound every read
        // (rows i0..i0+tile_rows of k rows 0..2*tile_pairs) and write.
        unsafe { avx512_tiles::fill(a, cs, i0, (tile_rows, tile_pairs), chunk, kp) };
        return (tile_rows, tile_pairs);
    }
    let _ = (a, cs, i0, chunk, kp);
    (0, 0)
}

#[cfg(target_arch = "x86_64")]
mod avx512_tiles {
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX-512F and AVX512-BF16; `a` holds rows 0..2 * pairs of stride `cs` from `i0` to
    /// `i0 + rows`; `chunk` holds `rows` rows of stride `kp` with `pairs` pairs each; `rows` and
    /// `pairs` are multiples of 16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn fill(
        a: &[f32],
        cs: usize,
        i0: usize,
        (rows, pairs): (usize, usize),
        chunk: &mut [u32],
        kp: usize,
    ) {
        // SAFETY: the caller guarantees AVX-512F and AVX512-BF16 and the layout of `a` and `chunk`
        // (this fn's contract): with q0 + q < pairs and r0 + 16 <= rows (both multiples of
        // 16), every load reads 16 floats of rows 2 (q0 + q) and 2 (q0 + q) + 1 of `a` from
        // column i0 + r0, every store into `chunk` writes 16 pairs of row r0 + i from pair
        // q0, and the tile stores and gathers stay within the 256 u32 of `tile` (16 q + 15
        // < 256, column offsets up to 240 + 15); the transmutes reinterpret 16 bf16 as the
        // same 256 bits.
        unsafe {
            // tile[q][i]: pair q of row i; read back by columns with one gather per row.
            let mut tile = [0u32; 256];
            let column = _mm512_setr_epi32(
                0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240,
            );
            let src = a.as_ptr();
            let dst = chunk.as_mut_ptr();
            for q0 in (0..pairs).step_by(16) {
                for r0 in (0..rows).step_by(16) {
                    for q in 0..16 {
                        let kk = 2 * (q0 + q);
                        let lo = _mm512_loadu_ps(src.add(kk * cs + i0 + r0));
                        let hi = _mm512_loadu_ps(src.add((kk + 1) * cs + i0 + r0));
                        let lo: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(lo));
                        let hi: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(hi));
                        let pair = _mm512_or_si512(
                            _mm512_cvtepu16_epi32(lo),
                            _mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(hi)),
                        );
                        _mm512_storeu_si512(tile.as_mut_ptr().add(16 * q).cast(), pair);
                    }
                    for i in 0..16 {
                        let row = _mm512_i32gather_epi32::<4>(column, tile.as_ptr().add(i).cast());
                        _mm512_storeu_si512(dst.add((r0 + i) * kp + q0).cast(), row);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::round_to_bf16;
    use super::*;
    use crate::ops::low_rank::transpose;

    fn data(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((((i * 7919 + seed * 104729) % 2003) as f32 / 2003.0) - 0.5) * 3.0)
            .collect()
    }

    /// A [m, k] . B^T summed in f64 over the operands rounded to bf16: what the kernel computes
    /// up to the order of f32 additions.
    fn reference(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize)) -> Vec<f64> {
        let r = |x: f32| f64::from(round_to_bf16(x));
        let mut y = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                y[i * n + j] = (0..k).map(|kk| r(a[i * k + kk]) * r(b[j * k + kk])).sum();
            }
        }
        y
    }

    fn assert_close(got: &[f32], want: &[f64], k: usize) {
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            // f32 accumulation of k exact products of magnitude <= 2.25.
            let tol = 1e-6 * (k as f64) * 2.25 + 1e-6;
            assert!((f64::from(g) - w).abs() < tol, "[{i}] {g} vs {w}");
        }
    }

    /// The kernels this CPU runs.
    fn kernels() -> impl Iterator<Item = Bf16Kernel> {
        Bf16Kernel::ALL.into_iter().filter(|k| k.available())
    }

    #[test]
    fn every_kernel_equals_the_product_of_the_rounded_operands_for_ragged_shapes() {
        // Odd k (a padded pair), k past one AMX step and not a multiple of it, outputs ending
        // mid-panel and mid-vector, every register tile size, row counts that leave a partial
        // 16-row tile, and a row count past one row block.
        for kernel in kernels() {
            for &(m, k, n) in &[
                (1, 5, 3),
                (13, 37, 50),
                (8, 576, 192),
                (21, 64, 100),
                (17, 100, 49),
                // Whole 16 x 48 blocks accumulated in place over two chunks of k, beside a
                // partial block.
                (40, 1100, 96),
                (300, 513, 17),
            ] {
                let (a, b) = (data(m * k, 1), data(n * k, 2));
                let y = Bf16Panels::pack_for(kernel, &b, (n, k), (k, 1))
                    .unwrap()
                    .matmul(&a, m)
                    .unwrap();
                assert_close(&y, &reference(&a, &b, (m, k, n)), k);
            }
        }
    }

    /// A sum of two products in one pass equals the two products of the rounded operands
    /// added, on every kernel: ragged rows, columns and both k (one of them a LoRA rank), a
    /// first k past one AMX chunk, and an empty first product.
    #[test]
    fn a_second_product_adds_into_the_first() {
        for kernel in kernels() {
            for &(m, k, k2, n) in &[
                (13, 37, 16, 50),
                (40, 1100, 16, 96),
                (300, 64, 5, 17),
                (7, 0, 16, 20),
            ] {
                let (a, b) = (data(m * k, 11), data(n * k, 12));
                let (a2, b2) = (data(m * k2, 13), data(n * k2, 14));
                let p1 = Bf16Panels::pack_for(kernel, &b, (n, k), (k, 1)).unwrap();
                let p2 = Bf16Panels::pack_for(kernel, &b2, (n, k2), (k2, 1)).unwrap();
                let y = p1.matmul_plus(&a, m, (&p2, &a2)).unwrap();
                let want: Vec<f64> = reference(&a, &b, (m, k, n))
                    .iter()
                    .zip(reference(&a2, &b2, (m, k2, n)))
                    .map(|(x, y)| x + y)
                    .collect();
                assert_close(&y, &want, k + k2);
            }
            // The second product must have B's columns and kernel, and A2 its rows.
            let p1 = Bf16Panels::pack_for(kernel, &data(40, 1), (10, 4), (4, 1)).unwrap();
            let p2 = Bf16Panels::pack_for(kernel, &data(36, 2), (9, 4), (4, 1)).unwrap();
            assert!(p1.matmul_plus(&data(8, 3), 2, (&p2, &data(8, 4))).is_err());
            assert!(p1.matmul_plus(&data(8, 3), 2, (&p1, &data(7, 4))).is_err());
        }
    }

    /// Buffers reused from the pool hold stale values; filled with NaN pairs beforehand, every
    /// kernel and layout must still give the bits of fresh zeroed buffers (padding of k, of
    /// rows and of the last panel's columns all rewritten).
    #[test]
    fn stale_pooled_buffers_change_nothing() {
        let shapes = [(13, 37, 50), (21, 64, 100), (17, 101, 49), (40, 1100, 96)];
        let run = |kernel, (m, k, n): (usize, usize, usize)| {
            let (a, b) = (data(m * k, 7), data(n * k, 8));
            let packed = Bf16Panels::pack_for(kernel, &b, (n, k), (k, 1)).unwrap();
            let bt = Bf16Panels::pack_for(kernel, &transpose(&b, n, k), (n, k), (1, n)).unwrap();
            let at = transpose(&a, m, k);
            (
                packed.matmul(&a, m).unwrap(),
                bt.matmul_strided(&at, m, (1, m)).unwrap(),
            )
        };
        for kernel in kernels() {
            for shape in shapes {
                // Fresh buffers on a new thread (its pool is empty), then stale NaN ones.
                let fresh = std::thread::spawn(move || run(kernel, shape))
                    .join()
                    .unwrap();
                let stale = std::thread::spawn(move || {
                    for len in [1 << 10, 1 << 14, 1 << 16, 1 << 18] {
                        super::super::pool::give(vec![0xffff_ffff; len]);
                    }
                    run(kernel, shape)
                })
                .join()
                .unwrap();
                assert_eq!(fresh, stale, "{kernel:?} {shape:?}");
                assert!(fresh.0.iter().all(|v| v.is_finite()));
            }
        }
    }

    #[test]
    fn every_layout_of_the_operands_gives_the_same_bits() {
        let (m, k, n) = (19, 41, 70);
        let (a, b) = (data(m * k, 3), data(n * k, 4));
        for kernel in kernels() {
            let pack = |src: &[f32], strides| Bf16Panels::pack_for(kernel, src, (n, k), strides);
            let want = pack(&b, (k, 1)).unwrap().matmul(&a, m).unwrap();
            // B given as its transpose [k, n] (strides (1, n)), A as its transpose [k, m].
            let bt = pack(&transpose(&b, n, k), (1, n)).unwrap();
            assert_eq!(bt.matmul(&a, m).unwrap(), want);
            let at = transpose(&a, m, k);
            assert_eq!(bt.matmul_strided(&at, m, (1, m)).unwrap(), want);
            // A generic stride (every other element of a wider buffer).
            let wide: Vec<f32> = a.iter().flat_map(|&x| [x, 9.0]).collect();
            assert_eq!(bt.matmul_strided(&wide, m, (2 * k, 2)).unwrap(), want);
            let bw: Vec<f32> = b.iter().flat_map(|&x| [x, 9.0]).collect();
            let generic = pack(&bw, (2 * k, 2)).unwrap();
            assert_eq!(generic.matmul(&a, m).unwrap(), want);
        }
    }

    #[test]
    fn a_transposed_a_gives_the_bits_of_a_row_major_one_in_whole_tiles_and_tails() {
        // Rows past one 64-row task and not a multiple of 16, k with whole 32-k tiles, a
        // partial one and an odd last pair.
        for &(m, k, n) in &[(150, 71, 20), (64, 64, 48), (33, 96, 5)] {
            let (a, b) = (data(m * k, 9), data(n * k, 10));
            let at = transpose(&a, m, k);
            for kernel in kernels() {
                let p = Bf16Panels::pack_for(kernel, &b, (n, k), (k, 1)).unwrap();
                let want = p.matmul(&a, m).unwrap();
                assert_eq!(
                    p.matmul_strided(&at, m, (1, m)).unwrap(),
                    want,
                    "{kernel:?}"
                );
            }
        }
    }

    #[test]
    fn a_row_gets_the_same_bits_in_any_batch() {
        let (k, n) = (96, 130);
        let x = data(35 * k, 6);
        for kernel in kernels() {
            let w = Bf16Panels::pack_for(kernel, &data(n * k, 5), (n, k), (k, 1)).unwrap();
            let batch = w.matmul(&x, 35).unwrap();
            for r in [0, 7, 8, 14, 15, 16, 33, 34] {
                let alone = w.matmul(&x[r * k..(r + 1) * k], 1).unwrap();
                assert_eq!(alone, batch[r * n..(r + 1) * n], "{kernel:?} row {r}");
            }
        }
    }

    #[test]
    fn the_kernels_agree_with_each_other() {
        let (m, k, n) = (37, 200, 110);
        let (a, b) = (data(m * k, 7), data(n * k, 8));
        let run = |kernel| {
            Bf16Panels::pack_for(kernel, &b, (n, k), (k, 1))
                .unwrap()
                .matmul(&a, m)
                .unwrap()
        };
        let portable = run(Bf16Kernel::Portable);
        for kernel in kernels() {
            // The same exact pair products, added in a different order (AMX adds a step of 32
            // k as a block).
            for (x, y) in run(kernel).iter().zip(&portable) {
                assert!((x - y).abs() < 1e-3, "{kernel:?}: {x} vs {y}");
            }
        }
    }

    /// The register tiles run k in chunks, storing and reloading their f32 sums between them:
    /// the bits stay those of one chain over k, which the portable loop computes in the same
    /// order (the pair products are exact in f32).
    #[test]
    fn chunks_of_k_leave_the_register_tiles_bits_alone() {
        if !Bf16Kernel::Avx512Bf16.available() {
            return;
        }
        for &(m, k, n) in &[(19, 1100, 50), (9, 2 * 1024 + 2, 48)] {
            let (a, b) = (data(m * k, 9), data(n * k, 10));
            let run = |kernel| {
                Bf16Panels::pack_for(kernel, &b, (n, k), (k, 1))
                    .unwrap()
                    .matmul(&a, m)
                    .unwrap()
            };
            assert_eq!(
                run(Bf16Kernel::Avx512Bf16),
                run(Bf16Kernel::Portable),
                "{m} x {k} x {n}"
            );
        }
    }

    #[test]
    fn an_unavailable_kernel_is_an_error_and_the_best_one_is_available() {
        assert!(Bf16Kernel::best().available());
        assert!(Bf16Kernel::Portable.available());
        for kernel in Bf16Kernel::ALL {
            let packed = Bf16Panels::pack_for(kernel, &[1.0; 6], (2, 3), (3, 1));
            assert_eq!(packed.is_ok(), kernel.available(), "{kernel:?}");
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        assert!(Bf16Panels::pack_rows(&[0.0; 5], 2, 3).is_err());
        assert!(Bf16Panels::pack(&[0.0; 5], (2, 3), (3, 1)).is_err());
        let p = Bf16Panels::pack_rows(&[0.0; 6], 2, 3).unwrap();
        assert!(p.matmul(&[0.0; 5], 2).is_err());
        assert_eq!(p.matmul(&[], 0).unwrap(), Vec::<f32>::new());
    }
}
