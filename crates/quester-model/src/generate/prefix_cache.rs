//! Prompts' keys and values kept between requests, so that a prompt starting with an earlier
//! one's tokens prefills only the rest.
//!
//! Why: an agent's next turn re-renders its prompt, and most of it is what the previous turn's
//! prompt already held (the task, the rules, LaMer's earlier attempts). In LaMer's MineSweeper
//! evaluation 58% of the prompt text repeats the same trial's previous prompt, and prefill is
//! nearly all of a turn's cost when answers are a few tokens long.
//!
//! What is kept: each admitted prompt's own positions, copied out of its prefill batch (no
//! padding). A new prompt reuses the entry with the longest common token prefix when that is
//! at least [`MIN_REUSED_TOKENS`]; its last token is always run, for its logits. Entries are
//! evicted least recently used first, to stay under a byte budget. Everything is decided by
//! token ids and the order of admissions, so a run stays deterministic.

use crate::model::KvCache;

/// Shorter shared prefixes are prefilled with the rest of the batch instead: a prompt
/// prefilled alone costs a forward pass of its own.
pub const MIN_REUSED_TOKENS: usize = 32;

struct Entry {
    tokens: Vec<u32>,
    cache: KvCache,
    bytes: usize,
    /// The store's clock when it was last inserted or reused.
    used: u64,
}

/// How the store has served prompts so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixCacheCounts {
    /// Prompts that started from a kept prefix.
    pub hits: u64,
    /// Prompt tokens not prefilled thanks to it.
    pub reused_tokens: u64,
    /// Prompt tokens admitted in all.
    pub prompt_tokens: u64,
    /// Entries evicted to stay under the budget.
    pub evicted: u64,
}

/// Kept prompt prefixes under a byte budget (see the module docs).
pub(crate) struct PrefixCache {
    budget: usize,
    bytes: usize,
    clock: u64,
    entries: Vec<Entry>,
    pub(crate) counts: PrefixCacheCounts,
}

/// Leading tokens `a` and `b` have in common.
fn common_len(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl PrefixCache {
    pub(crate) fn new(budget_bytes: usize) -> Self {
        PrefixCache {
            budget: budget_bytes,
            bytes: 0,
            clock: 0,
            entries: Vec::new(),
            counts: PrefixCacheCounts::default(),
        }
    }

    /// The entry to start `prompt` from and how many of its positions to take: the longest
    /// common prefix over the entries (the earliest entry on ties), leaving the prompt's last
    /// token to run; None below [`MIN_REUSED_TOKENS`].
    pub(crate) fn lookup(&mut self, prompt: &[u32]) -> Option<(&KvCache, usize)> {
        let limit = prompt.len().saturating_sub(1);
        let (best, n) = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, common_len(&e.tokens, prompt).min(limit)))
            .fold(None, |acc: Option<(usize, usize)>, (i, n)| match acc {
                Some((_, m)) if m >= n => acc,
                _ => Some((i, n)),
            })?;
        if n < MIN_REUSED_TOKENS {
            return None;
        }
        self.clock += 1;
        let e = &mut self.entries[best];
        e.used = self.clock;
        self.counts.hits += 1;
        self.counts.reused_tokens += n as u64;
        Some((&e.cache, n))
    }

    /// Counts a prompt admitted (for the share of tokens reused).
    pub(crate) fn admitted(&mut self, prompt_tokens: usize) {
        self.counts.prompt_tokens += prompt_tokens as u64;
    }

    /// Keeps `cache` (one row holding exactly `tokens`' positions) unless an entry holds the
    /// same tokens already; evicts the least recently used entries beyond the budget. An entry
    /// larger than the whole budget is not kept.
    pub(crate) fn insert(&mut self, tokens: Vec<u32>, cache: KvCache) {
        self.clock += 1;
        if let Some(e) = self.entries.iter_mut().find(|e| e.tokens == tokens) {
            e.used = self.clock;
            return;
        }
        let bytes = cache.bytes();
        if bytes > self.budget || tokens.len() < MIN_REUSED_TOKENS {
            return;
        }
        while self.bytes + bytes > self.budget {
            let Some(oldest) = (0..self.entries.len()).min_by_key(|&i| self.entries[i].used) else {
                break;
            };
            self.bytes -= self.entries.swap_remove(oldest).bytes;
            self.counts.evicted += 1;
        }
        self.bytes += bytes;
        self.entries.push(Entry {
            tokens,
            cache,
            bytes,
            used: self.clock,
        });
    }

    /// Entries kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    fn cache(len: usize) -> KvCache {
        let mut c = KvCache::new(1, 1, 1, len, 1, DType::F32, &Device::Cpu).unwrap();
        c.set_len(len).unwrap();
        c
    }

    fn tokens(head: u32, len: usize) -> Vec<u32> {
        (0..len as u32).map(|t| head * 1000 + t).collect()
    }

    #[test]
    fn the_longest_shared_prefix_is_reused_and_the_last_token_always_runs() {
        let mut s = PrefixCache::new(1 << 20);
        s.insert(tokens(1, 40), cache(40));
        let mut longer = tokens(1, 60);
        longer[50] = 7;
        s.insert(longer.clone(), cache(60));
        // Shares 50 with the second entry, 40 with the first.
        let mut prompt = tokens(1, 80);
        prompt[70] = 9;
        assert_eq!(s.lookup(&prompt).map(|(_, n)| n), Some(50));
        // The whole prompt is kept: all but its last token are reused.
        assert_eq!(s.lookup(&tokens(1, 40)).map(|(_, n)| n), Some(39));
        // Too short a shared prefix: prefilled as usual.
        let mut other = tokens(1, 80);
        other[20] = 5;
        assert!(s.lookup(&other).is_none());
        assert_eq!(s.counts.hits, 2);
        assert_eq!(s.counts.reused_tokens, 89);
        // The same tokens are kept once.
        s.insert(tokens(1, 40), cache(40));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn the_least_recently_used_entries_leave_under_the_budget() {
        // Each 40-position entry: 2 tensors x 40 floats = 320 bytes; room for two.
        let mut s = PrefixCache::new(700);
        s.insert(tokens(1, 40), cache(40));
        s.insert(tokens(2, 40), cache(40));
        // Reusing the first makes the second the oldest.
        assert!(s.lookup(&tokens(1, 50)).is_some());
        s.insert(tokens(3, 40), cache(40));
        assert_eq!(s.len(), 2);
        assert_eq!(s.counts.evicted, 1);
        assert!(s.lookup(&tokens(2, 50)).is_none());
        assert!(s.lookup(&tokens(1, 50)).is_some());
        // Larger than the whole budget: not kept, nothing evicted for it.
        s.insert(tokens(4, 100), cache(100));
        assert_eq!((s.len(), s.counts.evicted), (2, 1));
    }
}
