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

    /// Keeps only the batch rows in `keep` (finished sequences leave the batch).
    pub fn select_rows(&mut self, keep: &Tensor) -> Result<()> {
        for t in self.keys.iter_mut().chain(self.values.iter_mut()) {
            *t = t.index_select(keep, 0)?;
        }
        Ok(())
    }
}
