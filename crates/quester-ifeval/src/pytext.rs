//! Python `str` semantics that the reference checkers rely on and Rust's standard library
//! spells differently.
//!
//! - Whitespace (`str.strip()`, `str.split()`, regex `\s`) is Python's `str.isspace()`: Rust's
//!   `char::is_whitespace` plus the four "information separators" U+001C..U+001F.
//! - Word characters (regex `\w`, hence `\b` and `RegexpTokenizer(r"\w+")`) are those for which
//!   `str.isalnum()` holds, or `_`. That is the letter and number general categories; unlike the
//!   Unicode `\w` of the `regex` crate it excludes combining marks (Devanagari vowel signs,
//!   for instance) and connector punctuation other than `_`.
//! - `str.isupper()` / `str.islower()` need at least one cased character and fail on any
//!   titlecase letter (U+01C5 "Dž" and friends), which Rust's `char` predicates do not model.

use std::sync::OnceLock;

/// Python's `str.isspace()` for one character.
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no argument.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python's `str.split()` with no argument: runs of whitespace separate, empty pieces dropped.
pub fn split_whitespace(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_space).filter(|piece| !piece.is_empty())
}

/// Sorted code point ranges of the general categories L* and N* (what `str.isalnum` accepts).
fn alnum_ranges() -> &'static [(u32, u32)] {
    static RANGES: OnceLock<Vec<(u32, u32)>> = OnceLock::new();
    RANGES.get_or_init(|| {
        use regex_syntax::hir::{Class, HirKind};
        // The pattern is a constant that regex-syntax always accepts; an error would leave the
        // table empty (ASCII is still handled by the fast path) rather than panic.
        let Ok(hir) = regex_syntax::parse(r"[\p{L}\p{N}]") else {
            return Vec::new();
        };
        match hir.kind() {
            HirKind::Class(Class::Unicode(cls)) => cls
                .ranges()
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32))
                .collect(),
            _ => Vec::new(),
        }
    })
}

/// Python's `str.isalnum()` for one character.
pub fn is_alnum(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    let cp = c as u32;
    let ranges = alnum_ranges();
    let i = ranges.partition_point(|&(_, end)| end < cp);
    ranges.get(i).is_some_and(|&(start, _)| start <= cp)
}

/// A character of Python's regex class `\w` (for `str` patterns).
pub fn is_word(c: char) -> bool {
    c == '_' || is_alnum(c)
}

/// Byte ranges of the maximal runs of `\w` characters, i.e. `re.findall(r"\w+", text)` with
/// the standard `re` module (not what NLTK 3.10's `RegexpTokenizer` does, see
/// `length_constraints:number_words`).
pub fn word_runs(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let start = loop {
            let (i, c) = chars.next()?;
            if is_word(c) {
                break i;
            }
        };
        let mut end = text.len();
        while let Some(&(i, c)) = chars.peek() {
            if !is_word(c) {
                end = i;
                break;
            }
            chars.next();
        }
        Some((start, end))
    })
}

/// Whether a Python regex `\b` holds at byte offset `at` of `text` (which must be a char
/// boundary): exactly one of the characters on either side is a word character.
pub fn is_word_boundary(text: &str, at: usize) -> bool {
    let before = text
        .get(..at)
        .and_then(|s| s.chars().next_back())
        .is_some_and(is_word);
    let after = text
        .get(at..)
        .and_then(|s| s.chars().next())
        .is_some_and(is_word);
    before != after
}

/// Titlecase letters (general category Lt); Python's `isupper`/`islower` reject them.
pub fn is_titlecase(c: char) -> bool {
    matches!(c as u32,
        0x01C5 | 0x01C8 | 0x01CB | 0x01F2
        | 0x1F88..=0x1F8F | 0x1F98..=0x1F9F | 0x1FA8..=0x1FAF
        | 0x1FBC | 0x1FCC | 0x1FFC)
}

/// Python's `str.isupper()`.
pub fn is_upper(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if c.is_lowercase() || is_titlecase(c) {
            return false;
        }
        cased |= c.is_uppercase();
    }
    cased
}

/// Python's `str.islower()`.
pub fn is_lower(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if c.is_uppercase() || is_titlecase(c) {
            return false;
        }
        cased |= c.is_lowercase();
    }
    cased
}

/// Python's `str.lower()` (full case mapping, final sigma included, like Rust's).
pub fn lower(s: &str) -> String {
    s.to_lowercase()
}

/// The regex fragment for one Python `\s` character (Rust's `\s` lacks U+001C..U+001F).
pub const SPACE_CLASS: &str = r"[\s\x1C-\x1F]";
