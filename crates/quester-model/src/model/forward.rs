//! Forward passes: full-sequence (training, scoring) and incremental with a KV cache (generation).

use super::layout::{heads_first, positions};
use super::shared_prefix::{common_prefix, worth_sharing};
use super::{DecodeWeights, KvCache, Layer, Model, PackedLayer};
use crate::error::{ModelError, Result};
use crate::nn::linear::pick;
use crate::nn::Linear;
use crate::ops::{
    causal_attention_in, frozen_matmul_packed, frozen_matmul_with, gather_log_softmax,
    gather_log_softmax_and_entropy, rms_norm, rope, rope_tables, swiglu, PackedMatrix,
};
use candle_core::{DType, Tensor};

/// A 0/1 mask [B, T] read into host memory (any numeric dtype accepted).
pub(crate) fn mask_rows(mask: &Tensor) -> Result<Vec<Vec<u32>>> {
    let m = mask.to_dtype(DType::F32)?.to_vec2::<f32>()?;
    Ok(m.into_iter()
        .map(|r| r.into_iter().map(|v| u32::from(v != 0.0)).collect())
        .collect())
}

impl Model {
    /// Batch size, length and the ids on the host (row-major), once every id is checked.
    fn check_ids(&self, ids: &Tensor) -> Result<(usize, usize, Vec<u32>)> {
        let (b, t) = ids.dims2()?;
        let flat: Vec<u32> = ids.to_dtype(DType::U32)?.flatten_all()?.to_vec1()?;
        if let Some(&bad) = flat.iter().find(|&&i| i as usize >= self.config.vocab_size) {
            return Err(ModelError::Input(format!(
                "token id {bad} is outside the vocabulary ({})",
                self.config.vocab_size
            )));
        }
        Ok((b, t, flat))
    }

    /// Final hidden states [B, T, hidden] (after the last RMSNorm).
    fn hidden(
        &self,
        ids: &Tensor,
        pos: &[Vec<u32>],
        key_mask: &[Vec<u32>],
        mut cache: Option<&mut KvCache>,
        packed: Option<&DecodeWeights>,
        grad: bool,
    ) -> Result<Tensor> {
        // Under LoRA only the adapters train: embeddings and norms stay off the graph.
        let track = grad && !self.lora_attached;
        let (b, t) = ids.dims2()?;
        let cfg = &self.config;
        let dtype = self.dtype();
        let ids = ids.to_dtype(DType::U32)?;
        let emb = pick(&self.embed_tokens, track);
        let mut x = emb
            .index_select(&ids.flatten_all()?, 0)?
            .reshape((b, t, cfg.hidden_size))?;
        let pos_t = Tensor::from_vec(pos.concat(), (b, t), self.device())?;
        let (cos, sin) = rope_tables(&pos_t, cfg.head_dim, cfg.rope_theta, dtype)?;
        let past = cache.as_ref().map(|c| c.len).unwrap_or(0);
        if let Some(c) = cache.as_ref() {
            if past + t > c.capacity {
                return Err(ModelError::Input(format!(
                    "KV cache capacity {} exceeded ({} + {t})",
                    c.capacity, past
                )));
            }
        }
        for (li, layer) in self.layers.iter().enumerate() {
            let kv = cache.as_deref_mut().map(|c| (&c.keys[li], &c.values[li]));
            let h = rms_norm(&x, &pick(&layer.input_layernorm, track), cfg.rms_norm_eps)?;
            let pl = packed.map(|p| &p.layers[li]);
            let a = self.attention(layer, pl, &h, (&cos, &sin), key_mask, kv, past, grad)?;
            x = self.mlp_block(layer, pl, &(x + a)?, grad)?;
        }
        if let Some(c) = cache {
            c.len += t;
        }
        Ok(rms_norm(&x, &pick(&self.norm, track), cfg.rms_norm_eps)?)
    }

    #[allow(clippy::too_many_arguments)]
    fn attention(
        &self,
        layer: &Layer,
        packed: Option<&PackedLayer>,
        x: &Tensor,
        tables: (&Tensor, &Tensor),
        key_mask: &[Vec<u32>],
        kv: Option<(&Tensor, &Tensor)>,
        past: usize,
        grad: bool,
    ) -> candle_core::Result<Tensor> {
        let (q, k, v) = self.qkv(layer, packed, x, tables, grad)?;
        let (q, k, v) = (self.group_queries(&q)?, heads_first(&k)?, heads_first(&v)?);
        let t = x.dims()[1];
        let (k, v) = match kv {
            Some((kc, vc)) => {
                // A bf16 cache stores them rounded (a no-op for an f32 cache).
                kc.slice_set(&k.to_dtype(kc.dtype())?, 2, past)?;
                vc.slice_set(&v.to_dtype(vc.dtype())?, 2, past)?;
                (kc.narrow(2, 0, past + t)?, vc.narrow(2, 0, past + t)?)
            }
            None => (k, v),
        };
        let o = causal_attention_in(&q, &k, &v, key_mask, past, self.precision)?;
        let o = self.ungroup(&o, t)?;
        layer.o_proj.forward_with(&o, packed.map(|p| &p.o), grad)
    }

    /// The attention inputs of `x` [B, T, hidden]: q [B, T, H, D] rotated and scaled by
    /// 1/sqrt(D), k and v [B, T, KVH, D] (k rotated), with the rope tables [B, T, D/2].
    /// `packed` (generation only) holds the layer's matrices packed for decoding.
    pub(super) fn qkv(
        &self,
        layer: &Layer,
        packed: Option<&PackedLayer>,
        x: &Tensor,
        (cos, sin): (&Tensor, &Tensor),
        grad: bool,
    ) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
        let cfg = &self.config;
        let (b, t, _) = x.dims3()?;
        let (h, kvh, d) = (
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        );
        let proj = |l: &Linear, p: Option<&PackedMatrix>| l.forward_with(x, p, grad);
        let mut q = proj(&layer.q_proj, packed.map(|p| &p.q))?.reshape((b, t, h, d))?;
        let mut k = proj(&layer.k_proj, packed.map(|p| &p.k))?.reshape((b, t, kvh, d))?;
        let v = proj(&layer.v_proj, packed.map(|p| &p.v))?.reshape((b, t, kvh, d))?;
        if let (Some(qn), Some(kn)) = (&layer.q_norm, &layer.k_norm) {
            let track = grad && !self.lora_attached;
            q = rms_norm(&q, &pick(qn, track), cfg.rms_norm_eps)?;
            k = rms_norm(&k, &pick(kn, track), cfg.rms_norm_eps)?;
        }
        let q = (rope(&q, cos, sin)? * (1.0 / (d as f64).sqrt()))?;
        Ok((q, rope(&k, cos, sin)?, v))
    }

    /// Queries [B, T, H, D] grouped by their key/value head: [B, KVH, G*T, D], so one batched
    /// matmul per kv head serves the whole group (no repeat of keys and values).
    pub(super) fn group_queries(&self, q: &Tensor) -> candle_core::Result<Tensor> {
        let (b, t, h, d) = q.dims4()?;
        let kvh = self.config.num_key_value_heads;
        let g = h / kvh;
        q.reshape((b, t, kvh, g, d))?
            .permute((0, 2, 3, 1, 4))?
            .contiguous()?
            .reshape((b, kvh, g * t, d))
    }

    /// The attention output [B, KVH, G*T, D] back to token rows [B, T, H*D].
    pub(super) fn ungroup(&self, o: &Tensor, t: usize) -> candle_core::Result<Tensor> {
        let (b, kvh, gt, d) = o.dims4()?;
        let g = gt / t.max(1);
        o.reshape((b, kvh, g, t, d))?
            .permute((0, 3, 1, 2, 4))?
            .contiguous()?
            .reshape((b, t, kvh * g * d))
    }

    /// `x + MLP(RMSNorm(x))`, the second half of a decoder layer.
    pub(super) fn mlp_block(
        &self,
        layer: &Layer,
        packed: Option<&PackedLayer>,
        x: &Tensor,
        grad: bool,
    ) -> candle_core::Result<Tensor> {
        let track = grad && !self.lora_attached;
        let h = rms_norm(
            x,
            &pick(&layer.post_attention_layernorm, track),
            self.config.rms_norm_eps,
        )?;
        let gate = layer
            .gate_proj
            .forward_with(&h, packed.map(|p| &p.gate), grad)?;
        let up = layer
            .up_proj
            .forward_with(&h, packed.map(|p| &p.up), grad)?;
        let m =
            layer
                .down_proj
                .forward_with(&swiglu(&gate, &up)?, packed.map(|p| &p.down), grad)?;
        x + m
    }

    pub(super) fn head(&self, grad: bool) -> Tensor {
        match &self.lm_head {
            Some(w) => pick(w, grad),
            None => pick(&self.embed_tokens, grad),
        }
    }

    /// Logits of hidden rows [N, hidden]. The head is trained only in a full fine-tune; otherwise
    /// it is a frozen matrix (no gradient work, and the few rows of decoding read it once).
    fn head_logits(&self, h: &Tensor, grad: bool) -> Result<Tensor> {
        if grad && !self.lora_attached {
            Ok(crate::nn::full_matmul(h, &self.head(true), self.precision)?)
        } else if let Some(p) = self.packed_head(h)? {
            Ok(frozen_matmul_packed(h, &self.head(false), &p)?)
        } else {
            Ok(frozen_matmul_with(h, &self.head(false), self.precision)?)
        }
    }

    /// The head's bf16 panels when it is frozen for good (LoRA attached) and its products run
    /// on the CPU's bf16 kernels; `None` otherwise (a full fine-tune changes it every step).
    fn packed_head(&self, h: &Tensor) -> Result<Option<std::sync::Arc<crate::ops::FrozenBf16>>> {
        let w = self
            .lm_head
            .as_ref()
            .unwrap_or(&self.embed_tokens)
            .as_tensor();
        if !self.lora_attached
            || self.precision != crate::precision::Precision::Bf16
            || h.dtype() != DType::F32
            || w.dtype() != DType::F32
            || crate::ops::portable_wanted(h.device())
        {
            return Ok(None);
        }
        Ok(Some(self.packed_head.get_or_pack(w)?))
    }

    /// Logits [B, T, vocab] for `ids` [B, T] with a 0/1 `mask` [B, T] (left or right padding;
    /// positions are counted over real tokens only). Tracks gradients.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (b, t, _) = self.check_ids(ids)?;
        let rows = mask_rows(mask)?;
        let pos = positions(&rows, &vec![0; b]);
        let h = self.hidden(ids, &pos, &rows, None, None, true)?;
        let logits = self.head_logits(&h.reshape((b * t, self.config.hidden_size))?, true)?;
        Ok(logits.reshape((b, t, self.config.vocab_size))?)
    }

    /// The RL entry point: log-probabilities of the given tokens under the model.
    ///
    /// Returns [B, T - targets_from] where column c is `ln p(ids[b, targets_from + c] |
    /// ids[b, ..targets_from + c])`. Entries are 0 where the target or the position predicting
    /// it is padding (so the first real token after left padding, like the first token of any
    /// sequence, has no log-prob). The output head
    /// is evaluated only on the positions that predict a target. Differentiable.
    pub fn token_logprobs(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
    ) -> Result<Tensor> {
        Ok(self
            .logprobs_kept(ids, mask, targets_from, true, false, None)?
            .0)
    }

    /// [`Model::token_logprobs`] and, at the same positions, the entropy (nats) of the predicted
    /// next-token distribution, both [B, T - targets_from] and differentiable (the entropy
    /// bonus of the policy loss).
    pub fn token_logprobs_and_entropy(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
    ) -> Result<(Tensor, Tensor)> {
        let (lp, ent) = self.logprobs_kept(ids, mask, targets_from, true, true, None)?;
        let ent = ent.ok_or_else(|| ModelError::Input("entropy was not computed".into()))?;
        Ok((lp, ent))
    }

    /// [`Model::token_logprobs`] without building the autograd graph: the same numbers for a
    /// fraction of the memory (scoring, and the PPO pass that only needs the values).
    pub fn token_logprobs_detached(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
    ) -> Result<Tensor> {
        Ok(self
            .logprobs_kept(ids, mask, targets_from, false, false, None)?
            .0)
    }

    /// [`Model::token_logprobs_and_entropy`] evaluated only where `keep` [B, T - targets_from]
    /// is non-zero (a loss mask): the output head, the softmax and their backward skip the
    /// other positions, whose log-prob and entropy are 0. The kept entries equal the unmasked
    /// call's. A multi-turn sequence's observation tokens after its first answer, and the
    /// prompt tail of a row whose answer starts later than the batch's first, are such positions.
    pub fn token_logprobs_and_entropy_at(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
        keep: &Tensor,
    ) -> Result<(Tensor, Tensor)> {
        let (b, t) = ids.dims2()?;
        if keep.dims() != [b, t.saturating_sub(targets_from)] {
            return Err(ModelError::Input(format!(
                "keep mask has shape {:?}, expected [{b}, {}]",
                keep.dims(),
                t.saturating_sub(targets_from)
            )));
        }
        let kept = keep_rows(keep)?;
        let (lp, ent) = self.logprobs_kept(ids, mask, targets_from, true, true, Some(&kept))?;
        let ent = ent.ok_or_else(|| ModelError::Input("entropy was not computed".into()))?;
        Ok((lp, ent))
    }

    /// `kept`: the [B, n] row-major positions (flat `r * n + c`) where the head is evaluated;
    /// None = all of them.
    fn logprobs_kept(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        targets_from: usize,
        grad: bool,
        entropy: bool,
        kept: Option<&[u32]>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let (b, t, flat) = self.check_ids(ids)?;
        if targets_from == 0 || targets_from >= t {
            return Err(ModelError::Input(format!(
                "targets_from must be in 1..{t} (the first token has no prediction), got {targets_from}"
            )));
        }
        let rows = mask_rows(mask)?;
        let n = t - targets_from;
        // Nothing kept: evaluate everywhere, so the loss still reaches the trainable variables
        // (with zero gradient) as it would unmasked.
        let kept = kept.filter(|k| !k.is_empty());
        let kept_idx = kept
            .map(|k| Tensor::from_slice(k, k.len(), self.device()))
            .transpose()?;
        // A prefix every row shares runs once; it ends at the latest where the targets begin.
        let host_ids: Vec<Vec<u32>> = flat.chunks(t.max(1)).map(<[u32]>::to_vec).collect();
        let shared = worth_sharing(common_prefix(&host_ids, &rows), targets_from);
        let hsel = if shared > 0 {
            let h = self.hidden_shared_prefix(ids, shared, &rows, grad)?;
            // Row of the hidden state at position j of sequence r (see hidden_shared_prefix).
            let s = t - shared;
            let at = |r: usize, j: usize| {
                if j < shared {
                    j
                } else {
                    shared + r * s + j - shared
                }
            };
            let idx: Vec<u32> = match kept {
                Some(k) => k
                    .iter()
                    .map(|&i| at(i as usize / n, targets_from - 1 + i as usize % n) as u32)
                    .collect(),
                None => (0..b)
                    .flat_map(|r| (targets_from - 1..t - 1).map(move |j| at(r, j) as u32))
                    .collect(),
            };
            let len = idx.len();
            h.index_select(&Tensor::from_vec(idx, len, self.device())?, 0)?
        } else {
            let pos = positions(&rows, &vec![0; b]);
            let h = self
                .hidden(ids, &pos, &rows, None, None, grad)?
                .narrow(1, targets_from - 1, n)?
                .reshape((b * n, self.config.hidden_size))?;
            match &kept_idx {
                Some(idx) => h.index_select(idx, 0)?,
                None => h,
            }
        };
        let mut targets = ids
            .to_dtype(DType::U32)?
            .narrow(1, targets_from, n)?
            .flatten_all()?;
        if let Some(idx) = &kept_idx {
            targets = targets.index_select(idx, 0)?;
        }
        let m = hsel.dim(0)?;
        // Row chunks bound the size of the [rows, vocab] logits block alive at once in forward.
        let chunk = 256;
        let (mut parts, mut ent_parts) = (Vec::new(), Vec::new());
        let mut start = 0;
        while start < m {
            let len = chunk.min(m - start);
            let logits = self.head_logits(&hsel.narrow(0, start, len)?, grad)?;
            let tg = targets.narrow(0, start, len)?;
            if entropy {
                // One pass over the logits for both (the log-probs are the same bits).
                let both = gather_log_softmax_and_entropy(&logits, &tg)?;
                parts.push(both.narrow(1, 0, 1)?.squeeze(1)?);
                ent_parts.push(both.narrow(1, 1, 1)?.squeeze(1)?);
            } else {
                parts.push(gather_log_softmax(&logits, &tg)?);
            }
            start += len;
        }
        // Kept rows back to their [B, n] places; the rest stay 0.
        let place = |v: Tensor| -> Result<Tensor> {
            let v = match &kept_idx {
                Some(idx) => Tensor::zeros(b * n, v.dtype(), self.device())?.index_add(
                    idx,
                    &v.contiguous()?,
                    0,
                )?,
                None => v,
            };
            Ok(v.reshape((b, n))?)
        };
        let lp = place(Tensor::cat(&parts, 0)?)?;
        let tmask = Tensor::from_vec(
            rows.iter()
                .flat_map(|r| (targets_from..t).map(move |j| (r[j] * r[j - 1]) as f32))
                .collect::<Vec<_>>(),
            (b, n),
            self.device(),
        )?
        .to_dtype(self.dtype())?;
        let ent = if entropy {
            Some((place(Tensor::cat(&ent_parts, 0)?)? * &tmask)?)
        } else {
            None
        };
        Ok(((lp * tmask)?, ent))
    }

    /// Runs new tokens `ids` [B, T] through the model with a KV cache and returns the logits of
    /// the last position [B, vocab] (no gradients). `key_mask` [B][cache.len + T] marks real
    /// tokens; `past_real` [B] counts the real tokens already in the cache per sequence.
    pub fn forward_cached(
        &self,
        ids: &Tensor,
        key_mask: &[Vec<u32>],
        past_real: &[u32],
        cache: &mut KvCache,
    ) -> Result<Tensor> {
        self.forward_cached_with(ids, key_mask, past_real, cache, None)
    }

    /// [`Model::forward_cached`] with the base matrices read from `packed` (a snapshot of this
    /// model's, see [`DecodeWeights`]) when given.
    pub fn forward_cached_with(
        &self,
        ids: &Tensor,
        key_mask: &[Vec<u32>],
        past_real: &[u32],
        cache: &mut KvCache,
        packed: Option<&DecodeWeights>,
    ) -> Result<Tensor> {
        if let Some(p) = packed {
            p.check(self)?;
        }
        let (b, t, _) = self.check_ids(ids)?;
        let past = cache.len;
        if key_mask.len() != b || key_mask.iter().any(|r| r.len() != past + t) {
            return Err(ModelError::Input(
                "key mask does not match cache + new tokens".into(),
            ));
        }
        let new_mask: Vec<Vec<u32>> = key_mask.iter().map(|r| r[past..].to_vec()).collect();
        let pos = positions(&new_mask, past_real);
        let h = self.hidden(ids, &pos, key_mask, Some(cache), packed, false)?;
        let last = h
            .narrow(1, t - 1, 1)?
            .reshape((b, self.config.hidden_size))?;
        match packed {
            Some(p) => Ok(p.head.matmul(&last)?),
            None => self.head_logits(&last, false),
        }
    }

    /// A KV cache sized for this model.
    ///
    /// Under [`Precision::Bf16`](crate::precision::Precision) on the CPU (f32 weights, our
    /// kernels) the cache holds bf16: decoding is bound by reading it, and attention's
    /// training products already read keys and values rounded to bf16 under that precision,
    /// so the rollouts' attention sees the values the training pass does. Otherwise it has the
    /// model's dtype.
    pub fn new_cache(&self, batch: usize, capacity: usize) -> Result<KvCache> {
        Ok(KvCache::new(
            self.config.num_hidden_layers,
            batch,
            self.config.num_key_value_heads,
            capacity,
            self.config.head_dim,
            self.cache_dtype(),
            self.device(),
        )?)
    }

    /// The element type of [`Model::new_cache`]'s caches.
    pub fn cache_dtype(&self) -> DType {
        let dtype = self.dtype();
        let bf16 = self.precision == crate::precision::Precision::Bf16
            && dtype == DType::F32
            && self.device().is_cpu()
            && !crate::ops::portable_wanted(self.device());
        if bf16 {
            DType::BF16
        } else {
            dtype
        }
    }
}

/// The flat positions `r * n + c` where a [B, n] 0/1 mask is non-zero, in order.
fn keep_rows(keep: &Tensor) -> Result<Vec<u32>> {
    let v = keep.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    Ok(v.iter()
        .enumerate()
        .filter(|(_, &x)| x != 0.0)
        .map(|(i, _)| i as u32)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Architecture, LoraConfig, ModelConfig, Precision};

    /// Under a bf16 adapter the head is packed at its first product and reused by later
    /// scoring and training passes; forgetting it packs it again, to the same log-probs.
    #[test]
    fn a_lora_head_is_packed_once() {
        let mut m = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, 40), 2).unwrap();
        let ids = Tensor::new(&[[3u32, 17, 5, 9, 31, 2, 8]], &candle_core::Device::Cpu).unwrap();
        let mask = Tensor::ones((1, 7), DType::U32, &candle_core::Device::Cpu).unwrap();
        let slot = |m: &Model| m.packed_head.current();
        m.set_precision(Precision::Bf16);
        m.token_logprobs(&ids, &mask, 1).unwrap();
        assert!(
            slot(&m).is_none(),
            "a full fine-tune's head changes: never kept"
        );
        m.attach_lora(&LoraConfig::default()).unwrap();
        let first: Vec<Vec<f32>> = m.token_logprobs(&ids, &mask, 1).unwrap().to_vec2().unwrap();
        let packed = slot(&m).expect("packed at the first product");
        m.token_logprobs_detached(&ids, &mask, 1).unwrap();
        assert!(std::sync::Arc::ptr_eq(&packed, &slot(&m).unwrap()));
        m.forget_packed_weights();
        assert!(slot(&m).is_none());
        let again: Vec<Vec<f32>> = m.token_logprobs(&ids, &mask, 1).unwrap().to_vec2().unwrap();
        assert!(!std::sync::Arc::ptr_eq(&packed, &slot(&m).unwrap()));
        assert_eq!(first, again);
    }
}
