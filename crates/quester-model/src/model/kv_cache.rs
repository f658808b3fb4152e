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
    /// An empty cache for `layers` layers.
    pub fn new(
        layers: usize,
        batch: usize,
        kv_heads: usize,
        capacity: usize,
        head_dim: usize,
        dtype: DType,
    ) -> Result<Self> {
        let mk = || Tensor::zeros((batch, kv_heads, capacity, head_dim), dtype, &Device::Cpu);
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

    /// Keeps only the batch rows in `keep` (finished sequences leave the batch).
    pub fn select_rows(&mut self, keep: &Tensor) -> Result<()> {
        for t in self.keys.iter_mut().chain(self.values.iter_mut()) {
            *t = t.index_select(keep, 0)?;
        }
        Ok(())
    }
}
