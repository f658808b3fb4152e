//! Sequences that start with the same tokens run those tokens once.
//!
//! A GRPO group is several completions of one prompt, and LaMer's trials of one task share the
//! system prompt and the task text: padded to a batch, the model would recompute the same
//! prefix for every row, forward and backward. Here the prefix goes through the layers once as
//! a batch of one, every row's suffix attends to the prefix's keys and values (broadcast, so
//! their gradients sum over the rows), and the token-wise work (projections, MLP, norms) runs
//! over the prefix rows plus the suffix rows: `P + B*S` tokens instead of `B*(P+S)`.

use super::layout::{heads_first, positions};
use super::Model;
use crate::error::Result;
use crate::nn::linear::pick;
use crate::ops::{causal_attention_in, keys_with_prefix, rms_norm, rope_tables};
use candle_core::{DType, Tensor};

/// Below this many shared tokens the bookkeeping is not worth it.
pub(crate) const MIN_SHARED_PREFIX: usize = 8;

/// Leading tokens that every row has in common (0 for fewer than two rows: nothing to share).
pub fn common_prefix_len(rows: &[&[u32]]) -> usize {
    let [first, rest @ ..] = rows else { return 0 };
    if rest.is_empty() {
        return 0;
    }
    (0..first.len())
        .take_while(|&j| rest.iter().all(|r| r.get(j) == Some(&first[j])))
        .count()
}

/// The prefix a batch runs once: the tokens every row starts with, at most `limit`, or 0 when
/// that is too short to be worth it. Training, scoring and generation all decide by this.
pub fn shared_prefix_len(rows: &[&[u32]], limit: usize) -> usize {
    worth_sharing(common_prefix_len(rows), limit)
}

/// `common` shared tokens capped at `limit`, or 0 below [`MIN_SHARED_PREFIX`].
pub(crate) fn worth_sharing(common: usize, limit: usize) -> usize {
    let n = common.min(limit);
    if n >= MIN_SHARED_PREFIX {
        n
    } else {
        0
    }
}

/// The number of leading positions where every row holds a real token and all rows hold the
/// same one (0 for a single row: there is nothing to share).
pub(crate) fn common_prefix(ids: &[Vec<u32>], mask: &[Vec<u32>]) -> usize {
    let rows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let real = mask
        .iter()
        .map(|m| m.iter().take_while(|&&x| x != 0).count())
        .min()
        .unwrap_or(0);
    common_prefix_len(&rows).min(real)
}

impl Model {
    /// Final hidden states (after the last RMSNorm) of `ids` [B, T] whose first `p` tokens are
    /// real and the same in every row (`0 < p < T`), as token rows [P + B*S, hidden]: the
    /// prefix's P rows, then row b's S = T - P suffix rows at `P + b*S`. `mask` is [B][T].
    pub(crate) fn hidden_shared_prefix(
        &self,
        ids: &Tensor,
        p: usize,
        mask: &[Vec<u32>],
        grad: bool,
    ) -> Result<Tensor> {
        let track = grad && !self.lora_attached;
        let cfg = &self.config;
        let (b, t) = ids.dims2()?;
        let s = t - p;
        let n = p + b * s;
        let hd = cfg.num_attention_heads * cfg.head_dim;
        let ids = ids.to_dtype(DType::U32)?;
        let flat_ids = Tensor::cat(
            &[
                ids.narrow(0, 0, 1)?.narrow(1, 0, p)?.flatten_all()?,
                ids.narrow(1, p, s)?.flatten_all()?,
            ],
            0,
        )?;
        let mut x = pick(&self.embed_tokens, track)
            .index_select(&flat_ids, 0)?
            .reshape((1, n, cfg.hidden_size))?;
        // Suffix positions continue after the prefix, counting real tokens only.
        let suffix_mask: Vec<Vec<u32>> = mask.iter().map(|r| r[p..].to_vec()).collect();
        let pos: Vec<u32> = (0..p as u32)
            .chain(positions(&suffix_mask, &vec![p as u32; b]).concat())
            .collect();
        let (cos, sin) = rope_tables(
            &Tensor::from_vec(pos, (1, n), self.device())?,
            cfg.head_dim,
            cfg.rope_theta,
            self.dtype(),
        )?;
        let prefix_mask = vec![vec![1u32; p]];
        for layer in &self.layers {
            let h = rms_norm(&x, &pick(&layer.input_layernorm, track), cfg.rms_norm_eps)?;
            let (q, k, v) = self.qkv(layer, None, &h, (&cos, &sin), grad)?;
            let prefix = |x: &Tensor| x.narrow(1, 0, p);
            let suffix = |x: &Tensor| -> candle_core::Result<Tensor> {
                let (_, _, heads, d) = x.dims4()?;
                x.narrow(1, p, b * s)?.reshape((b, s, heads, d))
            };
            let (kp, vp) = (heads_first(&prefix(&k)?)?, heads_first(&prefix(&v)?)?);
            let o_p = causal_attention_in(
                &self.group_queries(&prefix(&q)?)?,
                &kp,
                &vp,
                &prefix_mask,
                0,
                self.precision,
            )?;
            // Every row's suffix sees the one prefix: keys [B, KVH, P + S, D].
            let o_s = causal_attention_in(
                &self.group_queries(&suffix(&q)?)?,
                &keys_with_prefix(&k, p, b)?,
                &keys_with_prefix(&v, p, b)?,
                mask,
                p,
                self.precision,
            )?;
            let o = Tensor::cat(
                &[
                    self.ungroup(&o_p, p)?.reshape((p, hd))?,
                    self.ungroup(&o_s, s)?.reshape((b * s, hd))?,
                ],
                0,
            )?
            .reshape((1, n, hd))?;
            let a = layer.o_proj.forward(&o, grad)?;
            x = self.mlp_block(layer, None, &(x + a)?, grad)?;
        }
        Ok(rms_norm(&x, &pick(&self.norm, track), cfg.rms_norm_eps)?
            .reshape((n, cfg.hidden_size))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_stops_at_the_first_difference_or_padding() {
        let ids = vec![vec![1, 2, 3, 4], vec![1, 2, 3, 5], vec![1, 2, 9, 4]];
        let ones = vec![vec![1; 4]; 3];
        assert_eq!(common_prefix(&ids, &ones), 2);
        assert_eq!(common_prefix(&ids[..2], &ones[..2]), 3);
        // Left padding: nothing is shared.
        let mut m = ones.clone();
        m[1][0] = 0;
        assert_eq!(common_prefix(&ids, &m), 0);
        // One row: nothing to share.
        assert_eq!(common_prefix(&ids[..1], &ones[..1]), 0);
        // Identical rows share everything.
        assert_eq!(
            common_prefix(&[vec![7, 8], vec![7, 8]], &[vec![1, 1], vec![1, 1]]),
            2
        );
    }
}
