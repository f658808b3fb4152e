//! SGE's exploration measure: the cumulative number of DISTINCT outcomes seen per task during
//! training (e.g. distinct sets of passed tests). Plain data with serde, so it can be stored in
//! checkpoints and restored on resume.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Distinct outcome keys seen so far, per task. Ordered maps keep the serialised form stable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistinctOutcomes {
    per_task: BTreeMap<String, BTreeSet<String>>,
}

impl DistinctOutcomes {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an outcome of a task; true when it had not been seen for this task before.
    pub fn record(&mut self, task: &str, outcome: &str) -> bool {
        self.per_task
            .entry(task.to_string())
            .or_default()
            .insert(outcome.to_string())
    }

    /// Distinct outcomes seen for one task (0 for an unknown task).
    pub fn count(&self, task: &str) -> usize {
        self.per_task.get(task).map_or(0, BTreeSet::len)
    }

    /// Mean over the tasks seen of their distinct-outcome counts (0 with no tasks).
    pub fn mean_per_task(&self) -> f64 {
        if self.per_task.is_empty() {
            return 0.0;
        }
        self.per_task.values().map(BTreeSet::len).sum::<usize>() as f64 / self.per_task.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_distinct_outcomes_by_hand() {
        // task a: {"1,2", "1"} (a repeat of "1,2" is not new) -> 2; task b: {"x"} -> 1.
        // mean = (2 + 1) / 2 = 1.5.
        let mut d = DistinctOutcomes::new();
        assert!(d.record("a", "1,2"));
        assert!(!d.record("a", "1,2"));
        assert!(d.record("a", "1"));
        assert!(d.record("b", "x"));
        assert_eq!((d.count("a"), d.count("b"), d.count("zz")), (2, 1, 0));
        assert_eq!(d.mean_per_task(), 1.5);
        assert_eq!(DistinctOutcomes::new().mean_per_task(), 0.0);
    }
}
