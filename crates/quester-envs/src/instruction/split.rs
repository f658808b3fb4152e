//! The held-out split of constraint combinations. A combination (the SET of family ids, order
//! and arguments ignored) belongs to the test split when a stable hash of it falls in a fixed
//! bucket, so train and test tasks never share a combination and the split is the same on
//! every machine and in every release (std's hasher is randomised per process, hence FNV-1a).

use super::families::Family;

/// Per mille of combinations in the test split.
pub const TEST_PER_MILLE: u64 = 150;

/// Which combinations a generator may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Train,
    Test,
    /// Every combination (for inspection; never train on it and evaluate on `test`).
    All,
}

impl Split {
    pub fn parse(name: &str) -> Option<Split> {
        match name {
            "train" => Some(Split::Train),
            "test" => Some(Split::Test),
            "all" => Some(Split::All),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
            Split::All => "all",
        }
    }

    /// Whether a combination in split `side` (train or test) is allowed.
    pub fn admits(self, side: Split) -> bool {
        self == Split::All || self == side
    }
}

/// 64-bit FNV-1a.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// The canonical key of a combination: its sorted, deduplicated ids joined by `+`.
pub fn combination_key(families: &[Family]) -> String {
    let mut ids: Vec<&str> = families.iter().map(|f| f.id()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.join("+")
}

/// The side (train or test) a combination is on.
pub fn side_of(families: &[Family]) -> Split {
    if fnv1a64(combination_key(families).as_bytes()) % 1000 < TEST_PER_MILLE {
        Split::Test
    } else {
        Split::Train
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_published_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn order_does_not_matter() {
        let a = [Family::NoComma, Family::Title, Family::NumberWords];
        let b = [Family::NumberWords, Family::NoComma, Family::Title];
        assert_eq!(combination_key(&a), combination_key(&b));
        assert_eq!(side_of(&a), side_of(&b));
    }
}
