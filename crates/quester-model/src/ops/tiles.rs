//! What the register-tiled product kernels (`packed_matmul`, `bf16`) share: the split of rows
//! into tiles and the output pointer their parallel tasks write through.

/// Rows per full tile: 8 rows x 3 vectors = 24 accumulators of the 32 vector registers.
pub(crate) const TILE_ROWS: usize = 8;

/// `rows` split into tiles of 8, then one of 4, 2 and 1 for the rest: (first row, height).
pub(crate) fn row_tiles(rows: usize) -> impl Iterator<Item = (usize, usize)> {
    let mut r = 0;
    std::iter::from_fn(move || {
        let n = match rows.checked_sub(r)? {
            0 => return None,
            n if n >= TILE_ROWS => TILE_ROWS,
            n if n >= 4 => 4,
            n if n >= 2 => 2,
            _ => 1,
        };
        r += n;
        Some((r - n, n))
    })
}

/// The output pointer shared by tasks that write disjoint elements of one buffer.
#[derive(Clone, Copy)]
pub(crate) struct SharedOut(pub(crate) *mut f32);
// SAFETY: every user hands each task a disjoint set of elements to write.
unsafe impl Send for SharedOut {}
// SAFETY: as for Send: the tasks that share it touch disjoint elements only.
unsafe impl Sync for SharedOut {}

impl SharedOut {
    pub(crate) fn at(self, offset: usize) -> *mut f32 {
        self.0.wrapping_add(offset)
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use std::arch::x86_64::*;

    /// Reads R rows of 3 accumulator vectors (48 columns) from `y`, the first `cols` columns of
    /// each row (the rest zero).
    ///
    /// # Safety
    /// The CPU has AVX-512F; `y` is valid for `cols` (<= 48) reads in each of R rows of stride
    /// `ys`.
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn load_tile<const R: usize>(
        y: *const f32,
        ys: usize,
        cols: usize,
    ) -> [[__m512; 3]; R] {
        // SAFETY: the caller guarantees AVX-512F and that `y` is valid for `cols` <= 48 reads in
        // each of R rows of stride `ys` (this fn's contract); vector j starts at column 16
        // j < cols and its mask (`col_mask`) keeps only the columns below `cols`.
        unsafe {
            let mut acc = [[_mm512_setzero_ps(); 3]; R];
            for (r, a) in acc.iter_mut().enumerate() {
                for (j, v) in a.iter_mut().enumerate() {
                    let c0 = j * 16;
                    if c0 >= cols {
                        break;
                    }
                    *v = _mm512_maskz_loadu_ps(col_mask(cols - c0), y.add(r * ys + c0));
                }
            }
            acc
        }
    }

    /// The lanes of a vector from column c0 when `left` columns remain from c0.
    fn col_mask(left: usize) -> __mmask16 {
        if left >= 16 {
            0xffff
        } else {
            (1u16 << left) - 1
        }
    }

    /// Writes R rows of 3 accumulator vectors (48 columns) to `y`, the first `cols` columns of
    /// each row only.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `y` is valid for `cols` (<= 48) writes in each of R rows of stride
    /// `ys`.
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn store_tile<const R: usize>(
        acc: &[[__m512; 3]; R],
        y: *mut f32,
        ys: usize,
        cols: usize,
    ) {
        // SAFETY: the caller guarantees AVX-512F and that `y` is valid for `cols` <= 48 writes in
        // each of R rows of stride `ys` (this fn's contract); vector j starts at column 16
        // j < cols and its mask (`col_mask`) keeps only the columns below `cols`.
        unsafe {
            for (r, a) in acc.iter().enumerate() {
                for (j, v) in a.iter().enumerate() {
                    let c0 = j * 16;
                    if c0 >= cols {
                        break;
                    }
                    _mm512_mask_storeu_ps(y.add(r * ys + c0), col_mask(cols - c0), *v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tiles_cover_every_row_once_largest_first() {
        let tiles: Vec<_> = super::row_tiles(23).collect();
        assert_eq!(tiles, [(0, 8), (8, 8), (16, 4), (20, 2), (22, 1)]);
        assert_eq!(super::row_tiles(0).count(), 0);
        assert_eq!(super::row_tiles(1).collect::<Vec<_>>(), [(0, 1)]);
    }
}
