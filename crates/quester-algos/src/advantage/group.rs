//! Grouping samples by arbitrary keys (task id, task + opponent, task + anchor, ...).

use std::collections::HashMap;
use std::hash::Hash;

/// Indices of equal keys, one `Vec` per distinct key, in order of first appearance (so the
/// result is deterministic).
pub fn group_indices<K: Hash + Eq>(keys: &[K]) -> Vec<Vec<usize>> {
    let mut slot: HashMap<&K, usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let g = *slot.entry(k).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_in_first_appearance_order() {
        let keys = ["b", "a", "b", "c", "a"];
        assert_eq!(group_indices(&keys), vec![vec![0, 2], vec![1, 4], vec![3]]);
        assert!(group_indices::<&str>(&[]).is_empty());
    }
}
