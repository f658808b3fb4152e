//! HeRL's degenerate-repetition detector (`contain_repeated_text` in its reward code): take the
//! last 160 characters of the response and split the response on them; more than three pieces
//! (the tail occurs at least three times, counted left to right without overlaps, as Python's
//! `str.split` counts) marks the response as degenerate and its score is zeroed.
//!
//! Characters are Unicode code points, as in Python. A response of at most 160 characters is
//! its own tail, occurs once and is never degenerate, which is what HeRL's code does too (the
//! empty response makes its `split` raise, which its caller scores 0; ours is an invalid step).

/// Length of the tail, in characters.
pub const TAIL_CHARS: usize = 160;
/// The response is degenerate when splitting on the tail gives more pieces than this.
pub const MAX_PIECES: usize = 3;

/// The last `TAIL_CHARS` characters of `text` (all of it when shorter).
fn tail(text: &str) -> &str {
    match text.char_indices().rev().nth(TAIL_CHARS - 1) {
        Some((start, _)) => &text[start..],
        None => text,
    }
}

/// Whether `text` ends in a loop: its last 160 characters occur at least three times.
pub fn is_degenerate_repetition(text: &str) -> bool {
    let tail = tail(text);
    if tail.is_empty() {
        return false;
    }
    // `matches` counts non-overlapping occurrences from the left, like `str.split`; stop
    // counting once the answer is known so a megabyte of loops stays cheap.
    text.matches(tail).take(MAX_PIECES).count() + 1 > MAX_PIECES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_responses_are_never_degenerate() {
        assert!(!is_degenerate_repetition(""));
        assert!(!is_degenerate_repetition("ha ha ha ha ha ha"));
        assert!(!is_degenerate_repetition(&"ab".repeat(80)));
    }

    #[test]
    fn three_copies_of_the_tail_are_degenerate_two_are_not() {
        let block: String = (0..160).map(|i| (b'a' + (i % 26) as u8) as char).collect();
        let block = format!("{block}!");
        assert_eq!(block.chars().count(), 161);
        // The tail of `x + block * n` is the last 160 characters of one block: it occurs once
        // per block.
        let two = format!("intro {}", block.repeat(2));
        let three = format!("intro {}", block.repeat(3));
        assert!(!is_degenerate_repetition(&two));
        assert!(is_degenerate_repetition(&three));
        assert!(is_degenerate_repetition(&block.repeat(50)));
    }

    #[test]
    fn a_long_varied_text_is_not_degenerate() {
        let text: String = (0..2000).map(|i| format!("word{i} ")).collect();
        assert!(!is_degenerate_repetition(&text));
    }

    #[test]
    fn counts_code_points_not_bytes() {
        // 160 two-byte characters: the tail is the whole string, which occurs once.
        let s = "é".repeat(160);
        assert!(!is_degenerate_repetition(&s));
        // 480 of them: the tail is 160 of them, which occurs three times without overlap.
        assert!(is_degenerate_repetition(&"é".repeat(480)));
        // 479: only two whole non-overlapping copies of the tail fit.
        assert!(!is_degenerate_repetition(&"é".repeat(479)));
    }

    #[test]
    fn overlapping_occurrences_are_not_counted_twice() {
        // A run of one character: with 161..=479 characters the 160-character tail fits twice
        // at most without overlap; Python's split agrees (`'a'*479` splits into 3 pieces).
        assert!(!is_degenerate_repetition(&"a".repeat(161)));
        assert!(!is_degenerate_repetition(&"a".repeat(479)));
        assert!(is_degenerate_repetition(&"a".repeat(480)));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".*") {
            let _ = is_degenerate_repetition(&s);
        }
    }
}
