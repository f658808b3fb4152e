//! BM25 over the catalogue with Lucene's scoring: k1 = 0.9, b = 0.4 (Anserini/pyserini defaults),
//! idf = ln(1 + (N - n + 0.5) / (n + 0.5)), document lengths stored lossily the way Lucene stores
//! norms (one byte, `SmallFloat.intToByte4`), f32 arithmetic, repeated query terms counted once per
//! occurrence, ties broken by the lower document number.

use super::text::{analyze, analyze_cached};
use std::collections::HashMap;

/// Lucene's BM25 defaults as used by pyserini.
pub const K1: f32 = 0.9;
/// Length normalisation.
pub const B: f32 = 0.4;

/// An inverted index with BM25 scoring.
pub struct Bm25Index {
    /// term -> (document, term frequency), documents ascending.
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Per document: 1 / (k1 * ((1 - b) + b * dl / avgdl)) with dl decoded from its norm byte.
    norm_inverse: Vec<f32>,
}

/// Lucene `SmallFloat.longToInt4`: 4 significant bits, the rest an exponent.
fn long_to_int4(i: u64) -> u32 {
    let num_bits = 64 - i.leading_zeros();
    if num_bits < 4 {
        i as u32
    } else {
        let shift = num_bits - 4;
        let encoded = ((i >> shift) as u32) & 0x07;
        encoded | ((shift + 1) << 3)
    }
}

fn int4_to_long(i: u32) -> u64 {
    let bits = u64::from(i & 0x07);
    let shift = i64::from(i >> 3) - 1;
    if shift == -1 {
        bits
    } else {
        (bits | 0x08) << shift
    }
}

/// 255 - longToInt4(i32::MAX): lengths below this are stored exactly.
const NUM_FREE_VALUES: u64 = 24;

/// The document length Lucene sees after encoding and decoding its norm byte.
pub fn quantized_length(len: u64) -> u64 {
    if len < NUM_FREE_VALUES {
        len
    } else {
        let byte = NUM_FREE_VALUES + u64::from(long_to_int4(len - NUM_FREE_VALUES));
        NUM_FREE_VALUES + int4_to_long((byte - NUM_FREE_VALUES) as u32)
    }
}

impl Bm25Index {
    /// Indexes `docs` (document number = position).
    pub fn build<S: AsRef<str>>(docs: &[S]) -> Self {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(docs.len());
        let mut memo = HashMap::new();
        for (d, doc) in docs.iter().enumerate() {
            let terms = analyze_cached(doc.as_ref(), &mut memo);
            lengths.push(terms.len() as u64);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for t in terms {
                *tf.entry(t).or_insert(0) += 1;
            }
            for (t, f) in tf {
                postings.entry(t).or_default().push((d as u32, f));
            }
        }
        for list in postings.values_mut() {
            list.sort_unstable();
        }
        let total: u64 = lengths.iter().sum();
        let avgdl = if docs.is_empty() {
            1.0
        } else {
            (total as f64 / docs.len() as f64) as f32
        };
        let norm_inverse = lengths
            .iter()
            .map(|&l| 1.0 / (K1 * ((1.0 - B) + B * quantized_length(l) as f32 / avgdl)))
            .collect();
        Bm25Index {
            postings,
            norm_inverse,
        }
    }

    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.norm_inverse.len()
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.norm_inverse.is_empty()
    }

    fn idf(&self, doc_freq: usize) -> f32 {
        let n = self.len() as f64;
        let df = doc_freq as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
    }

    /// The best `k` documents for `query` as (document, score), best first. Documents that share
    /// no term with the query are not returned.
    pub fn search(&self, query: &str, k: usize) -> Vec<(usize, f32)> {
        let mut counts: Vec<(String, u32)> = Vec::new();
        for t in analyze(query) {
            match counts.iter_mut().find(|(s, _)| *s == t) {
                Some((_, c)) => *c += 1,
                None => counts.push((t, 1)),
            }
        }
        // Dense accumulator: 1000 documents, cheaper than a hash map per query.
        let mut scores = vec![0.0f64; self.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (term, boost) in &counts {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let weight = *boost as f32 * self.idf(list.len());
            for &(doc, freq) in list {
                let ni = self.norm_inverse[doc as usize];
                let s = weight - weight / (1.0 + freq as f32 * ni);
                let slot = &mut scores[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += f64::from(s);
            }
        }
        let mut ranked: Vec<(usize, f32)> = touched
            .into_iter()
            .map(|d| (d as usize, scores[d as usize] as f32))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(k);
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lucene_norm_quantization() {
        // Exact below 24; above, 4 significant bits after subtracting 24.
        assert_eq!(quantized_length(23), 23);
        assert_eq!(quantized_length(24 + 15), 24 + 15);
        assert_eq!(quantized_length(24 + 17), 24 + 16);
        assert_eq!(quantized_length(24 + 100), 24 + 96);
    }

    #[test]
    fn hand_computed_scores() {
        // Three docs (after analysis): [red, shoe] [blue, shoe, shoe] [green, hat].
        let idx = Bm25Index::build(&["red shoes", "blue shoes shoes", "green hat"]);
        // avgdl = 7/3; doc 1: dl 3, tf(shoe) 2; df(shoe) = 2, N = 3.
        let idf = (1.0f64 + (3.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln() as f32;
        let ni = 1.0 / (K1 * ((1.0 - B) + B * 3.0 / (7.0f32 / 3.0)));
        let expected = idf - idf / (1.0 + 2.0 * ni);
        let hits = idx.search("shoe", 10);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].0, 1);
        assert!((hits[0].1 - expected).abs() < 1e-6);
        assert!(idx.search("the", 10).is_empty());
    }
}
