//! Pre-allocated key/value cache for batched incremental decoding.

use candle_core::{DType, Device, Result, Tensor};

/// Keys and values of every layer, [B, KVH, capacity, D] each, written in place.
#[derive(Debug)]
pub struct KvCache {
    pub(crate) keys: Vec<Tensor>,
    pub(crate) values: Vec<Tensor>,
    /// Cache positions already filled (the same for every sequence; padding is masked).
    pub(crate) len: usize,
    pub(crate) capacity: usize,
}

impl KvCache {
    /// An empty cache for `layers` layers on `device`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        layers: usize,
        batch: usize,
        kv_heads: usize,
        capacity: usize,
        head_dim: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let mk = || Tensor::zeros((batch, kv_heads, capacity, head_dim), dtype, device);
        Ok(KvCache {
            keys: (0..layers).map(|_| mk()).collect::<Result<_>>()?,
            values: (0..layers).map(|_| mk()).collect::<Result<_>>()?,
            len: 0,
            capacity,
        })
    }

    /// Filled positions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the first forward.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Starts every row with the filled positions of the one-row cache `prefix` (a prompt
    /// prefix all rows share, computed once). Only for an empty cache.
    pub(crate) fn fill_prefix(&mut self, prefix: &KvCache) -> Result<()> {
        if self.len != 0 || prefix.len > self.capacity || prefix.keys.len() != self.keys.len() {
            candle_core::bail!("KV cache: a prefix of {} does not fit", prefix.len);
        }
        let pairs = self.keys.iter_mut().zip(&prefix.keys);
        for (dst, src) in pairs.chain(self.values.iter_mut().zip(&prefix.values)) {
            let (b, h, _, d) = dst.dims4()?;
            let rows = src
                .narrow(2, 0, prefix.len)?
                .broadcast_as((b, h, prefix.len, d))?
                .contiguous()?;
            dst.slice_set(&rows, 2, 0)?;
        }
        self.len = prefix.len;
        Ok(())
    }

    /// A one-row cache holding row `row`'s `positions` (in order), filled and at capacity: a
    /// prompt's keys and values taken out of a padded batch, in storage of their own.
    pub(crate) fn row_positions(&self, row: usize, positions: &[u32]) -> Result<KvCache> {
        let n = positions.len();
        if positions.iter().any(|&p| p as usize >= self.len) {
            candle_core::bail!("KV cache: a position beyond the {} filled", self.len);
        }
        let Some(first) = self.keys.first() else {
            candle_core::bail!("KV cache: no layers");
        };
        let idx = Tensor::from_vec(positions.to_vec(), n, first.device())?;
        let take = |t: &Tensor| t.narrow(0, row, 1)?.index_select(&idx, 2);
        Ok(KvCache {
            keys: self.keys.iter().map(take).collect::<Result<_>>()?,
            values: self.values.iter().map(take).collect::<Result<_>>()?,
            len: n,
            capacity: n,
        })
    }

    /// A new one-row cache of `capacity` positions starting with the first `n` filled
    /// positions of this one-row cache (a cached prompt's prefix that a new prompt shares).
    pub(crate) fn prefix_copy(&self, n: usize, capacity: usize) -> Result<KvCache> {
        if n > self.len || n > capacity {
            candle_core::bail!(
                "KV cache: a prefix of {n} from {} filled into {capacity}",
                self.len
            );
        }
        let copy = |t: &Tensor| -> Result<Tensor> {
            let (b, h, _, d) = t.dims4()?;
            if b != 1 {
                candle_core::bail!("KV cache: a prefix is copied from a one-row cache");
            }
            let out = Tensor::zeros((1, h, capacity, d), t.dtype(), t.device())?;
            if n > 0 {
                out.slice_set(&t.narrow(2, 0, n)?.contiguous()?, 2, 0)?;
            }
            Ok(out)
        };
        Ok(KvCache {
            keys: self.keys.iter().map(copy).collect::<Result<_>>()?,
            values: self.values.iter().map(copy).collect::<Result<_>>()?,
            len: n,
            capacity,
        })
    }

    /// Bytes of the allocated keys and values.
    pub(crate) fn bytes(&self) -> usize {
        self.keys
            .iter()
            .chain(&self.values)
            .map(|t| t.elem_count() * t.dtype().size_in_bytes())
            .sum()
    }

    /// Sets the filled length of a cache whose positions were written row by row
    /// ([`Self::write_row`] needs it set first).
    pub(crate) fn set_len(&mut self, len: usize) -> Result<()> {
        if len > self.capacity {
            candle_core::bail!("KV cache: {len} positions in {}", self.capacity);
        }
        self.len = len;
        Ok(())
    }

    /// Keeps only the batch rows in `keep` (finished sequences leave the batch).
    pub fn select_rows(&mut self, keep: &Tensor) -> Result<()> {
        for t in self.keys.iter_mut().chain(self.values.iter_mut()) {
            *t = t.index_select(keep, 0)?;
        }
        Ok(())
    }

    /// Allocated positions.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Drops the first `front` filled positions (masked in every row) and reallocates to
    /// `capacity` positions (at least the ones kept): compaction and growth in one copy.
    pub(crate) fn retime(&mut self, front: usize, capacity: usize) -> Result<()> {
        if front > self.len {
            candle_core::bail!("KV cache: cannot drop {front} of {} positions", self.len);
        }
        let keep = self.len - front;
        let capacity = capacity.max(keep);
        for t in self.keys.iter_mut().chain(self.values.iter_mut()) {
            let (b, h, _, d) = t.dims4()?;
            let out = Tensor::zeros((b, h, capacity, d), t.dtype(), t.device())?;
            if keep > 0 {
                out.slice_set(&t.narrow(2, front, keep)?.contiguous()?, 2, 0)?;
            }
            *t = out;
        }
        self.len = keep;
        self.capacity = capacity;
        Ok(())
    }

    /// Writes the filled positions of row `from` of `src` into row `row` of this cache,
    /// right-aligned (src's last filled position onto this cache's last), in place: a
    /// finished row's place taken by a newcomer without copying the other rows. The row's
    /// earlier positions keep what they held (the newcomer's key mask hides them).
    pub(crate) fn write_row(&mut self, row: usize, src: &KvCache, from: usize) -> Result<()> {
        if src.keys.len() != self.keys.len() || src.len > self.len || src.len == 0 {
            candle_core::bail!(
                "KV cache: a row of {} positions does not fit {} (or the layers differ)",
                src.len,
                self.len
            );
        }
        let at = self.len - src.len;
        let (mine, theirs) = (
            self.keys.iter().chain(self.values.iter()),
            src.keys.iter().chain(src.values.iter()),
        );
        for (dst, s) in mine.zip(theirs) {
            let block = s.narrow(0, from, 1)?.narrow(2, 0, src.len)?.contiguous()?;
            // A view of one row shares the cache's storage: the write lands in the cache.
            dst.narrow(0, row, 1)?.slice_set(&block, 2, at)?;
        }
        Ok(())
    }

    /// Appends the rows of `other` below this cache's, right-aligned: the last filled position
    /// of both lands on the new last one, and the shorter side gets (masked) padding positions
    /// in front. Returns the padding positions put in front of this cache's rows and of
    /// `other`'s. Reallocates to `capacity` positions (at least the filled ones).
    pub(crate) fn append_rows(
        &mut self,
        other: &KvCache,
        capacity: usize,
    ) -> Result<(usize, usize)> {
        if other.keys.len() != self.keys.len() {
            candle_core::bail!("KV cache: appended rows have another number of layers");
        }
        let len = self.len.max(other.len);
        let capacity = capacity.max(len);
        let pad = |t: &Tensor, filled: usize| -> Result<Tensor> {
            let (b, h, _, d) = t.dims4()?;
            let real = t.narrow(2, 0, filled)?;
            if filled == len {
                return Ok(real);
            }
            let front = Tensor::zeros((b, h, len - filled, d), t.dtype(), t.device())?;
            if filled == 0 {
                return Ok(front);
            }
            Tensor::cat(&[&front, &real], 2)
        };
        let (mine, theirs) = (
            self.keys.iter_mut().chain(self.values.iter_mut()),
            other.keys.iter().chain(other.values.iter()),
        );
        for (dst, src) in mine.zip(theirs) {
            let (b, h, _, d) = dst.dims4()?;
            let ob = src.dims4()?.0;
            let both = Tensor::cat(&[&pad(dst, self.len)?, &pad(src, other.len)?], 0)?;
            let out = Tensor::zeros((b + ob, h, capacity, d), dst.dtype(), dst.device())?;
            if len > 0 {
                out.slice_set(&both.contiguous()?, 2, 0)?;
            }
            *dst = out;
        }
        let shifts = (len - self.len, len - other.len);
        self.len = len;
        self.capacity = capacity;
        Ok(shifts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// A one-layer cache whose key and value at (row r, position t) are `base + 100 r + t`.
    fn filled(rows: usize, len: usize, capacity: usize, base: f32) -> KvCache {
        let mut c = KvCache::new(1, rows, 1, capacity, 1, DType::F32, &Device::Cpu).unwrap();
        let v: Vec<f32> = (0..rows)
            .flat_map(|r| (0..len).map(move |t| base + (100 * r + t) as f32))
            .collect();
        let t = Tensor::from_vec(v, (rows, 1, len, 1), &Device::Cpu).unwrap();
        for x in c.keys.iter().chain(&c.values) {
            x.slice_set(&t, 2, 0).unwrap();
        }
        c.len = len;
        c
    }

    /// The filled positions of each row, keys and values (checked equal).
    fn rows(c: &KvCache) -> Vec<Vec<f32>> {
        let read = |x: &Tensor| -> Vec<Vec<f32>> {
            let b = x.dims4().unwrap().0;
            let x = x.narrow(2, 0, c.len).unwrap().contiguous().unwrap();
            x.reshape((b, c.len)).unwrap().to_vec2().unwrap()
        };
        assert_eq!(read(&c.keys[0]), read(&c.values[0]));
        read(&c.keys[0])
    }

    #[test]
    fn appended_rows_are_right_aligned_and_retime_drops_the_front() {
        let mut c = filled(2, 3, 4, 0.0);
        // A longer newcomer: the running rows get padding in front.
        assert_eq!(c.append_rows(&filled(1, 5, 5, 1000.0), 9).unwrap(), (2, 0));
        assert_eq!((c.len(), c.capacity()), (5, 9));
        let want = vec![
            vec![0.0, 0.0, 0.0, 1.0, 2.0],
            vec![0.0, 0.0, 100.0, 101.0, 102.0],
            vec![1000.0, 1001.0, 1002.0, 1003.0, 1004.0],
        ];
        assert_eq!(rows(&c), want);
        // A shorter one: it gets the padding.
        assert_eq!(c.append_rows(&filled(1, 1, 1, 7.0), 9).unwrap(), (0, 4));
        assert_eq!(rows(&c)[3], vec![0.0, 0.0, 0.0, 0.0, 7.0]);
        c.retime(2, 8).unwrap();
        assert_eq!((c.len(), c.capacity()), (3, 8));
        assert_eq!(rows(&c)[2], vec![1002.0, 1003.0, 1004.0]);
        assert!(
            c.retime(4, 8).is_err(),
            "only filled positions can be dropped"
        );
    }

    #[test]
    fn a_rows_positions_come_out_in_storage_of_their_own_and_a_prefix_copies() {
        let c = filled(2, 5, 6, 0.0);
        let mut one = c.row_positions(1, &[1, 3, 4]).unwrap();
        assert_eq!((one.len(), one.capacity()), (3, 3));
        assert_eq!(rows(&one), vec![vec![101.0, 103.0, 104.0]]);
        assert!(
            c.row_positions(0, &[5]).is_err(),
            "beyond the filled positions"
        );
        let p = one.prefix_copy(2, 4).unwrap();
        assert_eq!((p.len(), p.capacity()), (2, 4));
        assert_eq!(rows(&p), vec![vec![101.0, 103.0]]);
        assert!(one.prefix_copy(4, 4).is_err());
        // Their own storage: writing into the copy leaves the source as it was.
        one.write_row(0, &filled(1, 3, 3, 7.0), 0).unwrap();
        assert_eq!(rows(&p), vec![vec![101.0, 103.0]]);
        assert_eq!(rows(&c)[1], vec![100.0, 101.0, 102.0, 103.0, 104.0]);
        assert_eq!(one.bytes(), 2 * 3 * 4);
    }

    #[test]
    fn a_written_row_lands_right_aligned_and_leaves_the_others_alone() {
        let mut c = filled(3, 5, 6, 0.0);
        c.write_row(1, &filled(2, 2, 4, 1000.0), 1).unwrap();
        let got = rows(&c);
        assert_eq!(got[0], vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(got[1], vec![100.0, 101.0, 102.0, 1100.0, 1101.0]);
        assert_eq!(got[2], vec![200.0, 201.0, 202.0, 203.0, 204.0]);
        assert!(
            c.write_row(0, &filled(1, 6, 6, 0.0), 0).is_err(),
            "too long"
        );
    }
}
