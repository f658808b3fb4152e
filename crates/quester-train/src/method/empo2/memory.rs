//! EMPO2's tip memory: one list per task variation of (embedding key, tip content, score),
//! exact-duplicate contents dropped, the oldest evicted past a cap; retrieval keeps the
//! entries whose key is similar enough to the query and ranks them by their stored SCORE
//! (not by similarity). Plain data: the embeddings come from an [`Embedder`].

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

use crate::error::TrainError;

/// Turns texts into unit-length vectors (EMPO2: all-MiniLM-L6-v2, 384-d).
pub trait Embedder: Send + Sync {
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, TrainError>;
}

impl Embedder for quester_embed::SentenceEncoder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, TrainError> {
        Ok(self.encode(texts)?)
    }
}

/// One remembered tip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// Embedding of the state the tip was stored for.
    pub key: Vec<f32>,
    /// What a retrieving prompt is shown.
    pub content: String,
    /// The episode's score; retrieval ranks by it.
    pub score: f64,
    /// The training step that wrote it.
    pub step: usize,
}

/// The memory of one task variation, oldest entry first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskMemory {
    pub entries: VecDeque<MemoryEntry>,
}

impl TaskMemory {
    /// Adds an entry unless one with the same content is there; evicts the oldest past
    /// `cap`. Returns whether it was added.
    pub(crate) fn add(&mut self, entry: MemoryEntry, cap: usize) -> bool {
        if self.entries.iter().any(|e| e.content == entry.content) {
            return false;
        }
        self.entries.push_back(entry);
        while self.entries.len() > cap {
            self.entries.pop_front();
        }
        true
    }

    /// The entries with cosine similarity above `threshold` to `query`, highest score first
    /// (equal scores: the newer first), at most `k`.
    pub(crate) fn retrieve(&self, query: &[f32], threshold: f64, k: usize) -> Vec<&MemoryEntry> {
        self.ranked(|e| f64::from(cosine(&e.key, query)) > threshold)
            .into_iter()
            .take(k)
            .collect()
    }

    /// The entries `keep` accepts, highest score first (equal scores: the newer first).
    pub fn ranked(&self, keep: impl Fn(&MemoryEntry) -> bool) -> Vec<&MemoryEntry> {
        let mut hits: Vec<(usize, &MemoryEntry)> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| keep(e))
            .collect();
        hits.sort_by(|(ia, a), (ib, b)| b.score.total_cmp(&a.score).then(ib.cmp(ia)));
        hits.into_iter().map(|(_, e)| e).collect()
    }
}

/// Every task's memory, keyed by task seed (a recurring training task keeps its seed).
pub type TipMemory = BTreeMap<u64, TaskMemory>;

/// Cosine similarity; 0 when either vector is zero or the lengths differ (keys of another
/// embedding model never match).
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    quester_embed::cosine(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: [f32; 2], content: &str, score: f64) -> MemoryEntry {
        MemoryEntry {
            key: key.to_vec(),
            content: content.into(),
            score,
            step: 0,
        }
    }

    #[test]
    fn retrieval_filters_by_similarity_then_ranks_by_score() {
        let mut m = TaskMemory::default();
        // cos with the query [1, 0]: 1.0, 0.8, 0.6, 0.0
        m.add(entry([1.0, 0.0], "same state, low score", 0.1), 10);
        m.add(entry([0.8, 0.6], "near, high score", 0.9), 10);
        m.add(entry([0.6, 0.8], "far, top score", 1.0), 10);
        m.add(entry([0.0, 1.0], "orthogonal", 5.0), 10);
        let got: Vec<&str> = m
            .retrieve(&[1.0, 0.0], 0.5, 10)
            .iter()
            .map(|e| e.content.as_str())
            .collect();
        assert_eq!(
            got,
            [
                "far, top score",
                "near, high score",
                "same state, low score"
            ]
        );
        // Raising the threshold drops the far entry.
        let got = m.retrieve(&[1.0, 0.0], 0.7, 10);
        assert_eq!(got.len(), 2);
        // The threshold is strict: an exact cosine of 1 is not above 1.
        assert!(m.retrieve(&[1.0, 0.0], 1.0, 10).is_empty());
        // top-k cuts after ranking.
        let got = m.retrieve(&[1.0, 0.0], 0.5, 1);
        assert_eq!(got[0].content, "far, top score");
    }

    #[test]
    fn equal_scores_rank_the_newer_first() {
        let mut m = TaskMemory::default();
        m.add(entry([1.0, 0.0], "old", 1.0), 10);
        m.add(entry([1.0, 0.0], "new", 1.0), 10);
        let got: Vec<&str> = m
            .retrieve(&[1.0, 0.0], 0.5, 10)
            .iter()
            .map(|e| e.content.as_str())
            .collect();
        assert_eq!(got, ["new", "old"]);
    }

    #[test]
    fn duplicates_are_dropped_and_the_oldest_evicted() {
        let mut m = TaskMemory::default();
        assert!(m.add(entry([1.0, 0.0], "a", 0.0), 2));
        assert!(
            !m.add(entry([0.0, 1.0], "a", 9.0), 2),
            "same content, other key"
        );
        assert!(m.add(entry([1.0, 0.0], "b", 0.0), 2));
        assert!(m.add(entry([1.0, 0.0], "c", 0.0), 2));
        let names: Vec<&str> = m.entries.iter().map(|e| e.content.as_str()).collect();
        assert_eq!(names, ["b", "c"]);
        // An evicted content may come back.
        assert!(m.add(entry([1.0, 0.0], "a", 0.0), 2));
    }

    #[test]
    fn cosine_hand_cases() {
        assert!((cosine(&[1.0, 0.0], &[0.8, 0.6]) - 0.8).abs() < 1e-7);
        assert!((cosine(&[2.0, 0.0], &[0.0, 3.0])).abs() < 1e-7);
        assert!((cosine(&[1.0, 1.0], &[-1.0, -1.0]) + 1.0).abs() < 1e-7);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn memory_round_trips_through_json_exactly() {
        let mut mem = TipMemory::new();
        mem.entry(7).or_default().add(
            MemoryEntry {
                key: vec![0.1, -0.333_333_34, 1.0e-8, 0.577_350_26],
                content: "tip; at that timestep the action taken was look around".into(),
                score: 0.25,
                step: 3,
            },
            10,
        );
        let text = serde_json::to_string(&mem).unwrap();
        let back: TipMemory = serde_json::from_str(&text).unwrap();
        assert_eq!(back, mem);
    }
}
