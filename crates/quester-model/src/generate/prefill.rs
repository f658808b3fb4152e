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

/// Most padding a group of prompts prefilled together may carry: a prompt joins a group while
/// it is at least 7/8 of the group's longest.
const GROUP_LENGTH_RATIO: (usize, usize) = (7, 8);

/// Runs `prompts` (each at least one token) into a new cache of `capacity` positions, rows in
/// the prompts' order, each prompt ending at the cache's last position.
///
/// Prompts of similar length run together ([`length_groups`]): one padded batch of prompts
/// from 40 to 150 tokens (a server's mixed requests) spends as much compute on padding as on
/// the prompts. Each group is prefilled on its own and the groups' rows are then joined
/// right-aligned, the shorter ones behind masked positions, as the running batch joins rows.
pub(crate) fn prefill(
    model: &Model,
    packed: Option<&DecodeWeights>,
    prompts: &[&[u32]],
    capacity: usize,
) -> Result<Prefill> {
    let groups = length_groups(prompts);
    if groups.len() <= 1 {
        return prefill_padded(model, packed, prompts, capacity);
    }
    let longest = prompts.iter().map(|p| p.len()).max().unwrap_or(0);
    let run_group = |group: &[usize]| {
        let mine: Vec<&[u32]> = group.iter().map(|&i| prompts[i]).collect();
        prefill_padded(model, packed, &mine, 0)
    };
    let mut groups = groups.into_iter();
    let mut order = groups.next().unwrap_or_default();
    let mut all = run_group(&order)?;
    for group in groups {
        let part = run_group(&group)?;
        order.extend(group);
        let (front, theirs) = all.cache.append_rows(&part.cache, longest)?;
        for m in &mut all.key_mask {
            m.splice(0..0, std::iter::repeat_n(0, front));
        }
        all.key_mask.extend(part.key_mask.into_iter().map(|mut m| {
            m.splice(0..0, std::iter::repeat_n(0, theirs));
            m
        }));
        all.logits = Tensor::cat(&[&all.logits, &part.logits], 0)?;
    }
    // Back to the prompts' order: row k of the result is the one prompt k went to.
    let mut at = vec![0u32; order.len()];
    for (row, &prompt) in order.iter().enumerate() {
        at[prompt] = row as u32;
    }
    let idx = Tensor::from_slice(&at, at.len(), model.device())?;
    all.cache.select_rows(&idx)?;
    all.logits = all.logits.index_select(&idx, 0)?;
    let mut masks: Vec<Option<Vec<u32>>> = all.key_mask.into_iter().map(Some).collect();
    all.key_mask = at
        .iter()
        .map(|&r| masks[r as usize].take().unwrap_or_default())
        .collect();
    if all.cache.capacity() < capacity {
        all.cache.retime(0, capacity)?;
    }
    Ok(all)
}

/// The prompts in groups of similar length, longest first: sorted by length (ties in their
/// order, so a group's identical prompts stay together and share their prefix), a group
/// taking prompts while they are at least 7/8 of its first.
pub(crate) fn length_groups(prompts: &[&[u32]]) -> Vec<Vec<usize>> {
    let mut by_length: Vec<usize> = (0..prompts.len()).collect();
    by_length.sort_by_key(|&i| std::cmp::Reverse(prompts[i].len()));
    let (num, den) = GROUP_LENGTH_RATIO;
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in by_length {
        match groups.last_mut() {
            Some(g) if prompts[i].len() * den >= prompts[g[0]].len() * num => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    groups
}

/// Runs `prompts` as one batch into a new cache of `capacity` positions (at least the
/// longest prompt's). Prompts that start alike (a group's trials of one task) share those
/// tokens: they run once, as a batch of one, and every row's cache starts with their keys and
/// values. The rest of each prompt is left-padded to the longest rest after them, so every
/// prompt ends at the cache's last position.
fn prefill_padded(
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
/// worth running once (0 otherwise, and for a single prompt, which has no one to share them
/// with); each prompt keeps at least one token of its own, whose logits start its response.
fn shared_prompt_prefix(prompts: &[&[u32]]) -> usize {
    if prompts.len() < 2 {
        return 0;
    }
    let shortest = prompts.iter().map(|p| p.len()).min().unwrap_or(0);
    crate::model::shared_prefix_len(prompts, shortest.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::length_groups;

    #[test]
    fn prompts_of_similar_length_share_a_group_longest_first() {
        let lens = [40, 150, 140, 45, 150, 60, 131, 132];
        let prompts: Vec<Vec<u32>> = lens.iter().map(|&n| vec![1; n]).collect();
        let refs: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();
        // 132 is within 7/8 of 150, 131 is not (131 * 8 < 150 * 7); 40 is within 7/8 of 45.
        assert_eq!(
            length_groups(&refs),
            vec![vec![1, 4, 2, 7], vec![6], vec![5], vec![3, 0]]
        );
        let same: Vec<&[u32]> = vec![&[1, 2, 3], &[4, 5, 6]];
        assert_eq!(length_groups(&same), vec![vec![0, 1]]);
        assert!(length_groups(&[]).is_empty());
    }
}
