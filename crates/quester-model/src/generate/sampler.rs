//! Drawing one token from a row of logits.

use super::params::SamplingParams;
use crate::ops::ExpSlice;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The untempered log-probability of `token` under `logits` (0 for an empty row).
pub fn logprob(logits: &[f32], token: u32) -> f32 {
    let Some(&x) = logits.get(token as usize) else {
        return 0.0;
    };
    let m = row_max(logits);
    (f64::from(x) - log_sum_exp(logits, m)) as f32
}

/// The largest logit (NaNs skipped; -inf for a row without a number), in vector lanes: one
/// running max is a serial chain, and decoding takes it of 49k logits a row.
fn row_max(logits: &[f32]) -> f32 {
    crate::ops::lane_max(logits)
}

/// `e^(x * scale - shift)` of every logit, with the vector exponential (a row is the whole
/// vocabulary, 49k values for the default model: the scalar f64 `exp` per value was 7% of
/// batched decoding). Within 2 ulp of f32's exact value; sums over it are taken in f64.
fn scaled_exps(logits: &[f32], scale: f32, shift: f32) -> Vec<f32> {
    let mut e: Vec<f32> = logits.iter().map(|&x| x * scale).collect();
    f32::exp_shifted(&mut e, shift);
    e
}

/// `ln sum e^x` for a row whose largest value is `m` (the exponentials in f32, their sum in
/// f64).
fn log_sum_exp(logits: &[f32], m: f32) -> f64 {
    f64::from(m) + crate::ops::exp_shifted_sum(logits, m).ln()
}

/// Samples a token at `temperature` from `logits`; returns the token and its log-probability
/// under the distribution sampled from.
pub fn sample(
    logits: &[f32],
    temperature: f64,
    params: &SamplingParams,
    rng: &mut ChaCha8Rng,
) -> (u32, f32) {
    let v = logits.len();
    if v == 0 {
        return (0, 0.0);
    }
    if temperature <= 0.0 {
        // The first position of the largest logit (0 for a row without one above -inf).
        let top = row_max(logits);
        let best = match top > f32::NEG_INFINITY {
            true => logits.iter().position(|&x| x == top).unwrap_or(0),
            false => 0,
        };
        let m = logits[best];
        return (best as u32, (f64::from(m) - log_sum_exp(logits, m)) as f32);
    }
    let inv_t = (1.0 / temperature) as f32;
    let m = row_max(logits);
    let e = scaled_exps(logits, inv_t, m * inv_t);
    if params.top_k == 0 && params.top_p >= 1.0 {
        // The whole vocabulary: draw along the row as it is, without pairing and sorting.
        let total: f64 = e.iter().map(|&p| f64::from(p)).sum();
        let u: f64 = rng.random::<f64>() * total;
        let mut acc = 0.0;
        let mut chosen = v - 1;
        for (i, &p) in e.iter().enumerate() {
            acc += f64::from(p);
            if u < acc {
                chosen = i;
                break;
            }
        }
        return (chosen as u32, (f64::from(e[chosen]) / total).ln() as f32);
    }
    let (mut probs, total) = candidates(&e, params);
    if params.top_p < 1.0 {
        let target = params.top_p.max(0.0) * total;
        let n = nucleus_len(&probs, target).unwrap_or(probs.len());
        probs.truncate(n.max(1));
    }
    let kept: f64 = probs.iter().map(|p| p.0).sum();
    let u: f64 = rng.random::<f64>() * kept;
    let mut acc = 0.0;
    let mut chosen = probs[probs.len() - 1];
    for &p in &probs {
        acc += p.0;
        if u < acc {
            chosen = p;
            break;
        }
    }
    (chosen.1, (chosen.0 / kept).ln() as f32)
}

/// Orders (probability, token) pairs by probability, highest first, ties by token: a total
/// order (tokens are distinct), so any sort gives the same list.
fn by_prob_desc(a: &(f64, u32), b: &(f64, u32)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// The tokens a draw may take, as (weight, token) sorted by [`by_prob_desc`], and the mass
/// that top-p is a share of: the `top_k` most probable and their mass, or (no top-k) a prefix
/// of the sorted vocabulary long enough for the nucleus and the whole row's mass. (Pairing and
/// sorting or selecting over all 49k entries of a row took 0.16-1.6 ms a token; the
/// candidates are found in one or two passes over the row instead.)
fn candidates(e: &[f32], params: &SamplingParams) -> (Vec<(f64, u32)>, f64) {
    if params.top_k > 0 && params.top_k < e.len() {
        let probs = top_k_sorted(e, params.top_k);
        let total = probs.iter().map(|p| p.0).sum();
        return (probs, total);
    }
    let total: f64 = e.iter().map(|&p| f64::from(p)).sum();
    let target = params.top_p.max(0.0) * total;
    if params.top_p < 1.0 {
        if let Some(probs) = nucleus_candidates(e, target) {
            return (probs, total);
        }
    }
    let mut probs = pairs(e, |_| true);
    probs.sort_unstable_by(by_prob_desc);
    (probs, total)
}

/// The entries of `e` that `keep` accepts, as (weight, token) in token order.
fn pairs(e: &[f32], mut keep: impl FnMut(f32) -> bool) -> Vec<(f64, u32)> {
    e.iter()
        .enumerate()
        .filter(|&(_, &x)| keep(x))
        .map(|(i, &x)| (f64::from(x), i as u32))
        .collect()
}

/// The `k` (< e.len()) entries first in [`by_prob_desc`]'s order, sorted by it.
fn top_k_sorted(e: &[f32], k: usize) -> Vec<(f64, u32)> {
    if e.iter().fold(false, |nan, x| nan | x.is_nan()) {
        // NaN ranks first in the total order; keep the plain full sort for such rows.
        let mut probs = pairs(e, |_| true);
        probs.sort_unstable_by(by_prob_desc);
        probs.truncate(k);
        return probs;
    }
    // The k largest values so far, ascending. A block of the row is looked at entry by entry
    // only when one of its entries passes the smallest of them (a vector compare): after the
    // first blocks, almost none does.
    let mut largest = e[..k].to_vec();
    largest.sort_unstable_by(f32::total_cmp);
    for block in e[k..].chunks(BLOCK) {
        if !any_above(block, largest[0]) {
            continue;
        }
        for &x in block {
            if x > largest[0] {
                largest.remove(0);
                let at = largest.partition_point(|&y| y < x);
                largest.insert(at, x);
            }
        }
    }
    // Every entry at or above the k-th largest value, in token order; sorted, the first k.
    let kth = largest[0];
    let mut probs = Vec::with_capacity(k);
    for (b, block) in e.chunks(BLOCK).enumerate() {
        if !block.iter().fold(false, |hit, &x| hit | (x >= kth)) {
            continue;
        }
        for (i, &x) in block.iter().enumerate() {
            if x >= kth {
                probs.push((f64::from(x), (b * BLOCK + i) as u32));
            }
        }
    }
    probs.sort_unstable_by(by_prob_desc);
    probs.truncate(k);
    probs
}

/// Entries per block of [`top_k_sorted`]'s passes.
const BLOCK: usize = 64;

/// Whether an entry of `block` is above `floor` (no early exit, so it compiles to vector
/// compares).
fn any_above(block: &[f32], floor: f32) -> bool {
    block.iter().fold(false, |hit, &x| hit | (x > floor))
}

/// The entries of `e` (weights in [0, 1]) at or above the largest power of two whose entries
/// surely hold `target` of the mass, sorted by [`by_prob_desc`]: a prefix of the sorted row
/// that [`nucleus_len`] finds the nucleus in. `None` when no such power is found (NaN, or a
/// target the whole row barely reaches): the caller sorts the whole row.
fn nucleus_candidates(e: &[f32], target: f64) -> Option<Vec<(f64, u32)>> {
    // Mass per binary exponent, largest first.
    let mut mass = [0f64; 256];
    for &x in e {
        mass[(x.to_bits() >> 23 & 0xff) as usize] += f64::from(x);
    }
    // The sums above run in another order than the nucleus's running sum: a margin far above
    // their rounding (49k terms, ~1e-11 relative) keeps the prefix long enough.
    let needed = target * (1.0 + 1e-9);
    let mut acc = 0.0;
    // Exponent 255 holds infinities and NaNs: no power of two bounds them.
    for exp in (1..255usize).rev() {
        acc += mass[exp];
        if acc >= needed && acc.is_finite() {
            let floor = f32::from_bits((exp as u32) << 23);
            let mut probs = pairs(e, |x| x >= floor);
            probs.sort_unstable_by(by_prob_desc);
            return nucleus_len(&probs, target).map(|_| probs);
        }
    }
    None
}

/// Smallest prefix of the sorted list whose mass reaches `target`, if it does.
fn nucleus_len(sorted: &[(f64, u32)], target: f64) -> Option<usize> {
    let mut acc = 0.0;
    for (i, p) in sorted.iter().enumerate() {
        acc += p.0;
        if acc >= target {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn params(top_p: f64, top_k: usize) -> SamplingParams {
        SamplingParams {
            top_p,
            top_k,
            ..Default::default()
        }
    }

    #[test]
    fn greedy_picks_argmax_with_model_logprob() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let (t, lp) = sample(&[0.0, 2.0, 1.0], 0.0, &params(1.0, 0), &mut rng);
        assert_eq!(t, 1);
        let z = 1.0f64 + 2f64.exp() + 1f64.exp();
        assert!((f64::from(lp) - (2f64.exp() / z).ln()).abs() < 1e-6);
    }

    /// The lane max finds what a left-to-right scan finds: the first of tied maxima, NaNs
    /// skipped, position 0 for a row without a number above -inf; over a vocabulary-long row.
    #[test]
    fn greedy_takes_the_first_largest_like_a_scan() {
        let scan = |x: &[f32]| {
            let mut best = (0usize, f32::NEG_INFINITY);
            for (i, &v) in x.iter().enumerate() {
                if v > best.1 {
                    best = (i, v);
                }
            }
            best.0 as u32
        };
        let mut long: Vec<f32> = (0..49_157).map(|i| ((i * 7919) % 10_007) as f32).collect();
        long[30_001] = 20_000.0;
        long[40_000] = 20_000.0;
        long[5] = f32::NAN;
        let rows: [&[f32]; 6] = [
            &long,
            &[1.0, 3.0, 3.0, 2.0],
            &[f32::NAN, 1.0, f32::NAN, 4.0],
            &[f32::NAN, f32::NEG_INFINITY],
            &[f32::NEG_INFINITY; 3],
            &[-0.0, 0.0],
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        for x in rows {
            assert_eq!(
                sample(x, 0.0, &params(1.0, 0), &mut rng).0,
                scan(x),
                "{:?}",
                &x[..2]
            );
        }
    }

    /// The sampler before session 28 (pairs and selects over the whole row), kept to check the
    /// one-pass candidates against.
    fn reference_sample(
        logits: &[f32],
        temperature: f64,
        params: &SamplingParams,
        rng: &mut ChaCha8Rng,
    ) -> (u32, f32) {
        let v = logits.len();
        if v == 0 {
            return (0, 0.0);
        }
        if temperature <= 0.0 {
            let (best, _) =
                logits
                    .iter()
                    .enumerate()
                    .fold((0usize, f32::NEG_INFINITY), |acc, (i, &x)| {
                        if x > acc.1 {
                            (i, x)
                        } else {
                            acc
                        }
                    });
            let m = logits[best];
            return (best as u32, (f64::from(m) - log_sum_exp(logits, m)) as f32);
        }
        let inv_t = (1.0 / temperature) as f32;
        let m = row_max(logits);
        let e = scaled_exps(logits, inv_t, m * inv_t);
        if params.top_k == 0 && params.top_p >= 1.0 {
            // The whole vocabulary: draw along the row as it is, without pairing and sorting.
            let total: f64 = e.iter().map(|&p| f64::from(p)).sum();
            let u: f64 = rng.random::<f64>() * total;
            let mut acc = 0.0;
            let mut chosen = v - 1;
            for (i, &p) in e.iter().enumerate() {
                acc += f64::from(p);
                if u < acc {
                    chosen = i;
                    break;
                }
            }
            return (chosen as u32, (f64::from(e[chosen]) / total).ln() as f32);
        }
        let mut probs: Vec<(f64, u32)> = e
            .iter()
            .enumerate()
            .map(|(i, &p)| (f64::from(p), i as u32))
            .collect();
        let by_prob_desc_ref =
            |a: &(f64, u32), b: &(f64, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if params.top_k > 0 && params.top_k < v {
            probs.select_nth_unstable_by(params.top_k - 1, by_prob_desc_ref);
            probs.truncate(params.top_k);
        }
        let total: f64 = probs.iter().map(|p| p.0).sum();
        if params.top_p < 1.0 {
            let target = params.top_p.max(0.0) * total;
            let mut keep = None;
            if probs.len() > 1024 {
                probs.select_nth_unstable_by(1024 - 1, by_prob_desc_ref);
                probs[..1024].sort_unstable_by(by_prob_desc_ref);
                keep = nucleus_len(&probs[..1024], target);
            }
            let n = match keep {
                Some(n) => n,
                None => {
                    probs.sort_unstable_by(by_prob_desc_ref);
                    nucleus_len(&probs, target).unwrap_or(probs.len())
                }
            };
            probs.truncate(n.max(1));
        }
        let kept: f64 = probs.iter().map(|p| p.0).sum();
        let u: f64 = rng.random::<f64>() * kept;
        let mut acc = 0.0;
        let mut chosen = probs[probs.len() - 1];
        for &p in &probs {
            acc += p.0;
            if u < acc {
                chosen = p;
                break;
            }
        }
        (chosen.1, (chosen.0 / kept).ln() as f32)
    }

    /// Rows of logits: peaked and flat, with tied and -inf entries, over the default model's
    /// vocabulary and over a handful of tokens.
    fn rows() -> Vec<Vec<f32>> {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut out = Vec::new();
        for (v, scale) in [
            (49_152, 3.0f32),
            (49_152, 0.3),
            (49_152, 12.0),
            (7, 1.0),
            (300, 2.0),
        ] {
            for r in 0..6 {
                let mut x: Vec<f32> = (0..v).map(|_| rng.random::<f32>() * scale).collect();
                if r % 2 == 1 {
                    // Ties: logits on a coarse grid.
                    x.iter_mut().for_each(|y| *y = (*y * 2.0).round() / 2.0);
                }
                if r % 3 == 2 {
                    x[v / 2] = f32::NEG_INFINITY;
                }
                out.push(x);
            }
        }
        out
    }

    /// Against the reference: greedy, the whole vocabulary and top-p alone give the same token
    /// and log-probability bits; top-k with top-p the same token and log-probability (their
    /// mass is now summed in the sorted order); top-k alone draws from the same candidates
    /// with the same probabilities (now walked in the sorted order).
    #[test]
    fn candidates_found_in_passes_match_the_full_sort() {
        let cases = [
            (0.0, 1.0, 0),
            (1.0, 1.0, 0),
            (0.7, 0.8, 0),
            (1.0, 0.95, 0),
            (0.7, 0.8, 20),
            (1.0, 0.5, 5),
            (1.0, 1.0, 20),
        ];
        for (ri, x) in rows().iter().enumerate() {
            for &(t, top_p, top_k) in &cases {
                let p = params(top_p, top_k);
                for seed in 0..4 {
                    let mut a = ChaCha8Rng::seed_from_u64(seed);
                    let mut b = ChaCha8Rng::seed_from_u64(seed);
                    let (got, want) =
                        (sample(x, t, &p, &mut a), reference_sample(x, t, &p, &mut b));
                    let what = format!("row {ri}, T {t}, top_p {top_p}, top_k {top_k}");
                    if top_k > 0 && top_p >= 1.0 {
                        // The same candidate's probability: tokens drawn from the same set.
                        let e = scaled_exps(x, (1.0 / t) as f32, row_max(x) * (1.0 / t) as f32);
                        let set = match top_k < x.len() {
                            true => top_k_sorted(&e, top_k),
                            false => pairs(&e, |_| true),
                        };
                        assert!(set.iter().any(|c| c.1 == got.0), "{what}: {got:?}");
                        continue;
                    }
                    assert_eq!(got.0, want.0, "{what}: token");
                    assert_eq!(got.1.to_bits(), want.1.to_bits(), "{what}: log-prob");
                }
            }
        }
    }

    /// top-k's candidates are the k first of the full sort, ties at the k-th value taken by
    /// lowest token.
    #[test]
    fn top_k_takes_the_first_of_tied_values() {
        let e = [0.5f32, 0.2, 0.5, 0.2, 0.2, 1.0, 0.2];
        let got: Vec<u32> = top_k_sorted(&e, 4).iter().map(|p| p.1).collect();
        assert_eq!(got, vec![5, 0, 2, 1]);
        let got: Vec<u32> = top_k_sorted(&e, 6).iter().map(|p| p.1).collect();
        assert_eq!(got, vec![5, 0, 2, 1, 3, 4]);
    }

    #[test]
    fn top_k_one_is_greedy_with_logprob_zero() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..20 {
            let (t, lp) = sample(&[0.5, 0.1, 3.0, 2.9], 1.0, &params(1.0, 1), &mut rng);
            assert_eq!((t, lp), (2, 0.0));
        }
    }

    #[test]
    fn top_p_keeps_the_smallest_nucleus() {
        // probabilities 0.5, 0.3, 0.2 (logits are their logs): top_p 0.7 keeps {0, 1}.
        let logits: Vec<f32> = [0.5f32, 0.3, 0.2].iter().map(|p| p.ln()).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut seen = [0usize; 3];
        for _ in 0..2000 {
            let (t, lp) = sample(&logits, 1.0, &params(0.7, 0), &mut rng);
            seen[t as usize] += 1;
            let expect = if t == 0 { 0.5f32 / 0.8 } else { 0.3 / 0.8 };
            assert!((lp - expect.ln()).abs() < 1e-5);
        }
        assert_eq!(seen[2], 0);
        // Frequencies near 0.625 / 0.375.
        assert!((seen[0] as f64 / 2000.0 - 0.625).abs() < 0.05, "{seen:?}");
    }

    #[test]
    fn temperature_flattens_and_logprob_matches() {
        let logits = [0.0f32, 1.0];
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let (t, lp) = sample(&logits, 2.0, &params(1.0, 0), &mut rng);
        let p1 = 1.0 / (1.0 + (-0.5f64).exp());
        let expect = if t == 1 { p1 } else { 1.0 - p1 };
        assert!((f64::from(lp) - expect.ln()).abs() < 1e-6);
    }

    #[test]
    fn same_seed_same_draws() {
        let logits: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin()).collect();
        let draw = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..10)
                .map(|_| sample(&logits, 1.0, &params(0.9, 50), &mut rng).0)
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(5), draw(5));
        assert_ne!(draw(5), draw(6));
    }
}
