//! Optional GiGPO anchor clustering: observations that are nearly identical (similarity at or
//! above a threshold) share a step group. With threshold 1 only equal anchors are grouped.

use std::collections::HashMap;

/// Normalised edit similarity `1 - levenshtein(a, b) / max(|a|, |b|)` over characters; 1 for
/// equal strings (two empty strings included), 0 for completely different ones.
///
/// GiGPO's summaries name a similarity of 0.95 without fixing the measure; this one is cheap,
/// symmetric and exact on equality.
pub fn anchor_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let longest = a.len().max(b.len());
    // Two-row dynamic programme over edit distances.
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    1.0 - prev[b.len()] as f64 / longest as f64
}

/// Assigns each anchor a cluster id: distinct anchors are visited in order of first appearance
/// and each joins the first earlier cluster whose REPRESENTATIVE (its first anchor) has
/// similarity >= `threshold`, else starts a new cluster. Deterministic; equal anchors always
/// share a cluster. `threshold >= 1` means exact matching only.
pub fn cluster_anchors(anchors: &[&str], threshold: f64) -> Vec<usize> {
    let mut cluster_of: HashMap<&str, usize> = HashMap::new();
    let mut representatives: Vec<&str> = Vec::new();
    anchors
        .iter()
        .map(|&a| {
            if let Some(&c) = cluster_of.get(a) {
                return c;
            }
            let found = if threshold >= 1.0 {
                None
            } else {
                representatives
                    .iter()
                    .position(|r| anchor_similarity(r, a) >= threshold)
            };
            let c = found.unwrap_or_else(|| {
                representatives.push(a);
                representatives.len() - 1
            });
            cluster_of.insert(a, c);
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similarity_by_hand() {
        // "kitten" -> "sitting": 3 edits, longest 7 -> 1 - 3/7.
        assert!((anchor_similarity("kitten", "sitting") - (1.0 - 3.0 / 7.0)).abs() < 1e-12);
        assert_eq!(anchor_similarity("", ""), 1.0);
        assert_eq!(anchor_similarity("abc", ""), 0.0);
        // 20 chars, one substitution: 1 - 1/20 = 0.95.
        let a = "aaaaaaaaaaaaaaaaaaaa";
        let b = "aaaaaaaaaabaaaaaaaaa";
        assert!((anchor_similarity(a, b) - 0.95).abs() < 1e-12);
    }

    #[test]
    fn clusters_by_threshold() {
        let a = "aaaaaaaaaaaaaaaaaaaa";
        let b = "aaaaaaaaaabaaaaaaaaa"; // 0.95 to a
        let c = "bbbbbbbbbbbbbbbbbbbb";
        assert_eq!(cluster_anchors(&[a, b, c, a], 0.95), vec![0, 0, 1, 0]);
        assert_eq!(cluster_anchors(&[a, b, c, a], 1.0), vec![0, 1, 2, 0]);
        assert_eq!(cluster_anchors(&[a, b, c, a], 0.96), vec![0, 1, 2, 0]);
    }
}
