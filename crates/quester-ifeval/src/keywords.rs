//! `keywords:*`: required keywords, keyword counts, forbidden words and letter counts.
//!
//! Matching follows the reference's regexes: case-insensitive with Python's rules (see
//! [`crate::pyre`]), and plain substrings except for forbidden words, which need a Python `\b`
//! on both sides. Keywords are matched literally;
//! the reference pastes them into the regex unescaped, which only differs for keywords with
//! regex syntax (none in the data).

use crate::pyre::CiLiteral;
use crate::{pytext, Relation};

/// Every keyword must occur somewhere, case-insensitively, as a substring ("le" is found in
/// "people").
pub(crate) fn existence(response: &str, keywords: &[String]) -> bool {
    keywords
        .iter()
        .all(|keyword| CiLiteral::new(keyword).is_match(response))
}

/// Non-overlapping case-insensitive substring matches of the stripped keyword ("the" also
/// counts inside "there").
pub(crate) fn frequency(
    response: &str,
    keyword: &str,
    frequency: usize,
    relation: Relation,
) -> bool {
    relation.holds(
        CiLiteral::new(pytext::strip(keyword)).count(response),
        frequency,
    )
}

/// Fails if any word occurs case-insensitively with a Python word boundary on both sides:
/// "rock" is not hit by "rocky" but is hit by "rock-solid".
pub(crate) fn forbidden_words(response: &str, words: &[String]) -> bool {
    !words.iter().any(|word| contains_bounded(response, word))
}

/// Python's `re.search(r"\b" + word + r"\b", text, re.IGNORECASE)` for a literal word: tries
/// every start position, as the backtracking search does (`\b` with Python's word characters
/// is not expressible in the `regex` crate).
fn contains_bounded(text: &str, word: &str) -> bool {
    CiLiteral::new(word).all_spans(text).any(|(start, end)| {
        pytext::is_word_boundary(text, start) && pytext::is_word_boundary(text, end)
    })
}

/// Counts the lowercased character in the lowercased response. Any character counts, as in
/// Google's implementation (lm-evaluation-harness 0.4.13 refuses letters outside a-z).
pub(crate) fn letter_frequency(
    response: &str,
    letter: &str,
    frequency: usize,
    relation: Relation,
) -> bool {
    let letter = pytext::lower(pytext::strip(letter));
    let mut chars = letter.chars();
    let count = match (chars.next(), chars.next()) {
        (Some(c), None) => pytext::lower(response).chars().filter(|&x| x == c).count(),
        // A letter that lowercases to several characters is never a single counted
        // character (Python's Counter over characters would give 0).
        _ => 0,
    };
    relation.holds(count, frequency)
}
