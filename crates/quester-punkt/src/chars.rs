//! The character classes NLTK's code sees: Python's `str` predicates and the `\w`/`\d` of the
//! `regex` and `re` modules, from tables generated under the Python that produced the fixture.
//! Rust's own `char` methods and `regex` tables follow a newer Unicode, so they are not used
//! where the two could differ.

use crate::unicode_tables::{PY_LOWER, PY_SPACE, PY_UPPER, REGEX_DIGIT, REGEX_WORD, RE_WORD};

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let cp = u32::from(c);
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// `\s` of the `regex` module (and of Rust's `regex`): the Unicode White_Space property.
pub(crate) fn is_regex_space(c: char) -> bool {
    c.is_whitespace()
}

/// Python's `str.isspace`, used by `str.split()`, `str.strip()` and the stdlib `re`'s `\s`;
/// it also counts U+001C..U+001F, which White_Space does not.
pub(crate) fn is_py_space(c: char) -> bool {
    in_table(PY_SPACE, c)
}

/// `\w` of the `regex` module.
pub(crate) fn is_regex_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || (!c.is_ascii() && in_table(REGEX_WORD, c))
}

/// `\d` of the `regex` module.
pub(crate) fn is_regex_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && in_table(REGEX_DIGIT, c))
}

/// `\w` of the stdlib `re` module (`str.isalnum()` or `_`).
pub(crate) fn is_re_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || (!c.is_ascii() && in_table(RE_WORD, c))
}

/// Python's `str.isupper` of a single character.
pub(crate) fn is_py_upper(c: char) -> bool {
    c.is_ascii_uppercase() || (!c.is_ascii() && in_table(PY_UPPER, c))
}

/// Python's `str.islower` of a single character.
pub(crate) fn is_py_lower(c: char) -> bool {
    c.is_ascii_lowercase() || (!c.is_ascii() && in_table(PY_LOWER, c))
}

/// The body of a bracketed character class (for Rust's `regex`) matching `\d` of the `regex`
/// module, so a pattern written with it sees NLTK's digits rather than Rust's.
pub(crate) fn regex_digit_class_body() -> String {
    REGEX_DIGIT
        .iter()
        .map(|&(lo, hi)| format!("\\x{{{lo:X}}}-\\x{{{hi:X}}}"))
        .collect()
}

/// Python's `str.rstrip()`.
pub(crate) fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(is_py_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_classes() {
        assert!(is_py_space('\x1c') && !is_regex_space('\x1c'));
        assert!(is_py_space('\u{3000}') && is_regex_space('\u{3000}'));
        // A combining mark is `\w` to `regex` but not alphanumeric to `str`.
        assert!(is_regex_word('\u{301}') && !is_re_word('\u{301}'));
        assert!(is_regex_word('é') && is_re_word('é') && is_regex_word('_'));
        assert!(!is_regex_word('-') && !is_re_word('\''));
        assert!(is_regex_digit('٣') && !is_regex_digit('²'));
        assert!(is_py_upper('É') && is_py_lower('ß') && !is_py_upper('中') && !is_py_lower('中'));
        assert_eq!(py_rstrip("a b \x1f\n "), "a b");
    }
}
