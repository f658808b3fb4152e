//! The prompts of a batch run through the model into a new KV cache.

use crate::error::Result;
use crate::model::{DecodeWeights, KvCache, Model};
use candle_core::Tensor;

/// A batch of prompts run through the model: its cache, the logits of each prompt's last
/// token [B, vocab], and each row's key mask over the cache.
pub(crate) struct Prefill {
    pub(crate) cache: KvCache,
    pub(crate) logits: Tensor,
    pub(crate) key_mask: Vec<Vec<u32>>,
}

/// Runs `prompts` (each at least one token) into a new cache of `capacity` positions.
/// Prompts that start alike (a group's trials of one task) share those tokens: they run once,
/// as a batch of one, and every row's cache starts with their keys and values. The rest of
/// each prompt is left-padded to the longest rest after them, so every prompt ends at the
/// cache's last position.
pub(crate) fn prefill(
    model: &Model,
    packed: Option<&DecodeWeights>,
    prompts: &[&[u32]],
    capacity: usize,
) -> Result<Prefill> {
    let b = prompts.len();
    let max_prompt = prompts.iter().map(|p| p.len()).max().unwrap_or(0);
    let shared = shared_prompt_prefix(prompts);
    let mut cache = model.new_cache(b, capacity.max(max_prompt))?;
    if shared > 0 {
        let mut one = model.new_cache(1, shared)?;
        let prefix = Tensor::from_vec(prompts[0][..shared].to_vec(), (1, shared), model.device())?;
        model.forward_cached_with(&prefix, &[vec![1; shared]], &[0], &mut one, packed)?;
        cache.fill_prefix(&one)?;
    }
    let max_rest = max_prompt - shared;
    let mut ids = Vec::with_capacity(b * max_rest);
    let mut key_mask = Vec::with_capacity(b);
    for p in prompts {
        let rest = &p[shared..];
        let pad = max_rest - rest.len();
        ids.extend(std::iter::repeat_n(0u32, pad));
        ids.extend_from_slice(rest);
        let mut m = vec![1u32; shared];
        m.extend(std::iter::repeat_n(0u32, pad));
        m.extend(std::iter::repeat_n(1u32, rest.len()));
        key_mask.push(m);
    }
    let ids = Tensor::from_vec(ids, (b, max_rest), model.device())?;
    let past = vec![shared as u32; b];
    let logits = model.forward_cached_with(&ids, &key_mask, &past, &mut cache, packed)?;
    Ok(Prefill {
        cache,
        logits,
        key_mask,
    })
}

/// Leading prompt tokens that every request has in common, when there are enough of them to be
/// worth running once (0 otherwise); each prompt keeps at least one token of its own, whose
/// logits start its response.
fn shared_prompt_prefix(prompts: &[&[u32]]) -> usize {
    let shortest = prompts.iter().map(|p| p.len()).min().unwrap_or(0);
    crate::model::shared_prefix_len(prompts, shortest.saturating_sub(1))
}
