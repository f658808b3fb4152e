//! Cutting a mini-batch into micro-batches: by a count of sequences, or by a budget of the
//! tokens the model actually computes.
//!
//! A count is blind to length and to shared prompts: two 2,000-token trajectories and two
//! 6-token GRPO completions of one 160-token prompt cost the same slot. A token budget (verl's
//! dynamic batch size) packs rows until the work reaches the budget, counting what
//! `Model::token_logprobs` really runs: the prefix every row shares once (when it is worth
//! sharing, see `model::shared_prefix`), then every row padded to the longest. Sixteen
//! completions of one prompt then go through in one pass instead of eight.

use crate::model::{shared_prefix_len, worth_sharing};
use std::ops::Range;

/// The two caps of a micro-batch; a row that alone exceeds the token budget still runs, alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MicroBatchLimits {
    /// At most this many sequences (0 counts as 1).
    pub max_rows: usize,
    /// At most this many computed tokens ([`computed_tokens`]); 0 = no token cap.
    pub max_tokens: usize,
}

impl MicroBatchLimits {
    /// `rows` sequences at a time: the count-only plan.
    pub fn rows(rows: usize) -> Self {
        Self {
            max_rows: rows,
            max_tokens: 0,
        }
    }

    /// Packing by `tokens` computed tokens, with no cap on the count.
    pub fn tokens(tokens: usize) -> Self {
        Self {
            max_rows: usize::MAX,
            max_tokens: tokens,
        }
    }
}

/// Tokens the model computes for these rows as one padded batch whose targets start at
/// `targets_from`: a shared prefix `P` (0 when too short to share) once plus every row's
/// remainder padded to the longest row `T`, `P + B*(T - P)`.
pub fn computed_tokens(rows: &[&[u32]], targets_from: usize) -> usize {
    let t = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let p = shared_prefix_len(rows, targets_from);
    p + rows.len() * (t - p)
}

/// Consecutive ranges covering `rows` in order, each within `limits`. `first_trained[i]` is
/// the first trained position of row `i` (a batch's targets start at its rows' minimum, which
/// bounds the prefix it can share). Rows should come sorted by their tokens, so that those
/// sharing a prompt sit side by side; the plan does not reorder them.
///
/// Under a token budget a micro-batch also ends where the next row would shorten the prefix
/// its rows share: two prompts' groups in one batch would share nothing and pad every row to
/// the whole length, costing far more than two batches.
pub fn plan(
    rows: &[&[u32]],
    first_trained: &[usize],
    limits: MicroBatchLimits,
) -> Vec<Range<usize>> {
    let max_rows = limits.max_rows.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let first = rows[start];
        // Running state of the batch rows[start..end]: common prefix, longest row, earliest
        // target, and the prefix it shares (None while it holds one row).
        let (mut common, mut longest) = (first.len(), first.len());
        let mut targets_from = first_trained.get(start).copied().unwrap_or(0);
        let mut shared: Option<usize> = None;
        let mut end = start + 1;
        while end < rows.len() && end - start < max_rows {
            let row = rows[end];
            let lcp = first.iter().zip(row).take_while(|(a, b)| a == b).count();
            let c = common.min(lcp);
            let t = longest.max(row.len());
            let tf = targets_from.min(first_trained.get(end).copied().unwrap_or(0));
            if limits.max_tokens > 0 {
                let p = worth_sharing(c, tf);
                let cost = p + (end + 1 - start) * (t - p);
                if cost > limits.max_tokens || shared.is_some_and(|cur| p < cur) {
                    break;
                }
                shared = Some(p);
            }
            (common, longest, targets_from) = (c, t, tf);
            end += 1;
        }
        out.push(start..end);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[Vec<u32>]) -> Vec<&[u32]> {
        v.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn count_only_plan_is_chunks() {
        let v: Vec<Vec<u32>> = (0..5).map(|i| vec![i; 3]).collect();
        let r = rows(&v);
        let p = plan(&r, &[1; 5], MicroBatchLimits::rows(2));
        assert_eq!(p, vec![0..2, 2..4, 4..5]);
        // 0 rows counts as one.
        assert_eq!(plan(&r, &[1; 5], MicroBatchLimits::rows(0)).len(), 5);
        assert!(plan(&[], &[], MicroBatchLimits::rows(2)).is_empty());
    }

    #[test]
    fn computed_tokens_counts_a_shared_prefix_once() {
        // Three rows of a 10-token prompt + 2 response tokens: prefix 10 once + 3 * 2.
        let prompt: Vec<u32> = (0..10).collect();
        let v: Vec<Vec<u32>> = (0..3)
            .map(|i| prompt.iter().copied().chain([100 + i, 7]).collect())
            .collect();
        assert_eq!(computed_tokens(&rows(&v), 10), 10 + 3 * 2);
        // Targets from 9: only 9 tokens may be shared (the rest is per row).
        assert_eq!(computed_tokens(&rows(&v), 9), 9 + 3 * 3);
        // Below the 8-token threshold nothing is shared: rows padded to the longest.
        assert_eq!(computed_tokens(&rows(&v), 4), 3 * 12);
        // Rows that differ from the first token: everything padded to the longest.
        let w = vec![vec![1, 2, 3], vec![4, 5]];
        assert_eq!(computed_tokens(&rows(&w), 1), 2 * 3);
    }

    #[test]
    fn token_budget_packs_a_group_whole() {
        // Two groups of 4 completions (2 tokens) of two 20-token prompts.
        let mut v = Vec::new();
        for g in 0..2u32 {
            for i in 0..4u32 {
                let mut r: Vec<u32> = (0..20).map(|j| g * 1000 + j).collect();
                r.extend([500 + i, 9]);
                v.push(r);
            }
        }
        let r = rows(&v);
        let ft = [20; 8];
        // One group costs 20 + 4*2 = 28; both groups together would share nothing (8 * 22 =
        // 176 tokens): the batch ends at the group, whatever the budget.
        assert_eq!(
            plan(&r, &ft, MicroBatchLimits::tokens(28)),
            vec![0..4, 4..8]
        );
        assert_eq!(
            plan(&r, &ft, MicroBatchLimits::tokens(1000)),
            vec![0..4, 4..8]
        );
        // Rows that share nothing pack by their padded length.
        let w: Vec<Vec<u32>> = (0..5u32).map(|i| vec![i; 10]).collect();
        let wr = rows(&w);
        assert_eq!(
            plan(&wr, &[1; 5], MicroBatchLimits::tokens(30)),
            vec![0..3, 3..5]
        );
        // 27 tokens: three rows (20 + 3*2 = 26) then the fourth alone.
        assert_eq!(
            plan(&r, &ft, MicroBatchLimits::tokens(27)),
            vec![0..3, 3..4, 4..7, 7..8]
        );
        // Both caps: the row cap binds first.
        let both = MicroBatchLimits {
            max_rows: 2,
            max_tokens: 1000,
        };
        assert_eq!(plan(&r, &ft, both), vec![0..2, 2..4, 4..6, 6..8]);
        // A row longer than the budget runs alone.
        assert_eq!(plan(&r, &ft, MicroBatchLimits::tokens(5)).len(), 8);
    }

    #[test]
    fn plan_costs_match_computed_tokens() {
        // Every planned batch is within the budget by the same count the model uses.
        let mut v = Vec::new();
        for g in 0..3u32 {
            for i in 0..(3 + g) {
                let mut r: Vec<u32> = (0..(12 + 3 * g)).map(|j| g * 100 + j).collect();
                r.extend((0..(1 + i % 3)).map(|k| 900 + k));
                v.push(r);
            }
        }
        let r = rows(&v);
        let ft: Vec<usize> = v.iter().map(|x| x.len() - 1).collect();
        for budget in [16, 30, 40, 60, 200] {
            let p = plan(&r, &ft, MicroBatchLimits::tokens(budget));
            assert_eq!(p.iter().map(ExactSizeIterator::len).sum::<usize>(), v.len());
            for range in p {
                let tf = ft[range.clone()].iter().copied().min().unwrap();
                let cost = computed_tokens(&r[range.clone()], tf);
                assert!(
                    range.len() == 1 || cost <= budget,
                    "{range:?} costs {cost} > {budget}"
                );
            }
        }
    }
}
