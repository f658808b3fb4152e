//! `change_case:*`: all capitals, all lowercase, and the count of all-capital words.

use crate::{language, pytext, Relation};

/// Python `isupper()` on the whole response, then langdetect must say English. A langdetect
/// error passes (the reference catches the exception and returns True).
pub(crate) fn english_capital(response: &str) -> bool {
    pytext::is_upper(response) && language::detect(response).is_none_or(|lang| lang == "en")
}

/// Python `islower()` on the whole response, then langdetect must say English (error = pass).
pub(crate) fn english_lowercase(response: &str) -> bool {
    pytext::is_lower(response) && language::detect(response).is_none_or(|lang| lang == "en")
}

/// Counts `nltk.word_tokenize` tokens that satisfy `isupper()`, so contractions split
/// ("DON'T" is "DO" + "N'T", two words) and "I" or "A" count.
pub(crate) fn capital_word_frequency(response: &str, frequency: usize, relation: Relation) -> bool {
    let count = quester_punkt::word_tokenize(response)
        .iter()
        .filter(|token| pytext::is_upper(token))
        .count();
    relation.holds(count, frequency)
}
