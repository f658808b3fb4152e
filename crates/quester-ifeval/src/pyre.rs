//! Case-insensitive literal matching exactly as Python's `re` with `IGNORECASE` matches a
//! pattern made of plain characters (the keyword checkers build such patterns).
//!
//! Python compares lowercased characters, where "lowercase" is the FIRST character of the
//! full lowercase mapping (so U+0130 "İ" matches "i"), and adds a few equivalences that
//! lowercasing alone misses (`re._casefix`: i/ı, s/ſ, µ/μ, the Greek symbol forms, the
//! Cyrillic small-letter variants, ...). The `regex` crate's `(?i)` uses Unicode simple case
//! folding instead, which differs exactly on such letters: "İ" and "ı" never match "i" there.
//! A pattern character that is not cased (its lowercase and uppercase are itself) must match
//! exactly.

/// `re._casefix._EXTRA_CASES` of CPython 3.11: lowercase character -> its extra equivalents.
const EXTRA_CASES: [(char, &[char]); 50] = [
    ('\u{69}', &['\u{131}']),
    ('\u{73}', &['\u{17f}']),
    ('\u{b5}', &['\u{3bc}']),
    ('\u{131}', &['\u{69}']),
    ('\u{17f}', &['\u{73}']),
    ('\u{345}', &['\u{3b9}', '\u{1fbe}']),
    ('\u{390}', &['\u{1fd3}']),
    ('\u{3b0}', &['\u{1fe3}']),
    ('\u{3b2}', &['\u{3d0}']),
    ('\u{3b5}', &['\u{3f5}']),
    ('\u{3b8}', &['\u{3d1}']),
    ('\u{3b9}', &['\u{345}', '\u{1fbe}']),
    ('\u{3ba}', &['\u{3f0}']),
    ('\u{3bc}', &['\u{b5}']),
    ('\u{3c0}', &['\u{3d6}']),
    ('\u{3c1}', &['\u{3f1}']),
    ('\u{3c2}', &['\u{3c3}']),
    ('\u{3c3}', &['\u{3c2}']),
    ('\u{3c6}', &['\u{3d5}']),
    ('\u{3d0}', &['\u{3b2}']),
    ('\u{3d1}', &['\u{3b8}']),
    ('\u{3d5}', &['\u{3c6}']),
    ('\u{3d6}', &['\u{3c0}']),
    ('\u{3f0}', &['\u{3ba}']),
    ('\u{3f1}', &['\u{3c1}']),
    ('\u{3f5}', &['\u{3b5}']),
    ('\u{432}', &['\u{1c80}']),
    ('\u{434}', &['\u{1c81}']),
    ('\u{43e}', &['\u{1c82}']),
    ('\u{441}', &['\u{1c83}']),
    ('\u{442}', &['\u{1c84}', '\u{1c85}']),
    ('\u{44a}', &['\u{1c86}']),
    ('\u{463}', &['\u{1c87}']),
    ('\u{1c80}', &['\u{432}']),
    ('\u{1c81}', &['\u{434}']),
    ('\u{1c82}', &['\u{43e}']),
    ('\u{1c83}', &['\u{441}']),
    ('\u{1c84}', &['\u{442}', '\u{1c85}']),
    ('\u{1c85}', &['\u{442}', '\u{1c84}']),
    ('\u{1c86}', &['\u{44a}']),
    ('\u{1c87}', &['\u{463}']),
    ('\u{1c88}', &['\u{a64b}']),
    ('\u{1e61}', &['\u{1e9b}']),
    ('\u{1e9b}', &['\u{1e61}']),
    ('\u{1fbe}', &['\u{345}', '\u{3b9}']),
    ('\u{1fd3}', &['\u{390}']),
    ('\u{1fe3}', &['\u{3b0}']),
    ('\u{a64b}', &['\u{1c88}']),
    ('\u{fb05}', &['\u{fb06}']),
    ('\u{fb06}', &['\u{fb05}']),
];

/// `_sre.unicode_tolower`: the first character of the full lowercase mapping.
pub fn lower1(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// `_sre.unicode_toupper` likewise.
fn upper1(c: char) -> char {
    c.to_uppercase().next().unwrap_or(c)
}

/// `_sre.unicode_iscased`.
fn is_cased(c: char) -> bool {
    lower1(c) != c || upper1(c) != c
}

/// How one pattern character matches one text character.
#[derive(Debug, Clone)]
enum CharMatch {
    /// Not cased: only itself.
    Exact(char),
    /// The text character's `lower1` must be one of these.
    Lower(Vec<char>),
}

impl CharMatch {
    fn new(p: char) -> CharMatch {
        if !is_cased(p) {
            return CharMatch::Exact(p);
        }
        let lo = lower1(p);
        let mut set = vec![lo];
        if let Ok(i) = EXTRA_CASES.binary_search_by(|(k, _)| k.cmp(&lo)) {
            set.extend_from_slice(EXTRA_CASES[i].1);
        }
        CharMatch::Lower(set)
    }

    fn matches(&self, t: char) -> bool {
        match self {
            CharMatch::Exact(p) => *p == t,
            CharMatch::Lower(set) => set.contains(&lower1(t)),
        }
    }
}

/// A literal compiled for Python-style case-insensitive matching.
#[derive(Debug, Clone)]
pub struct CiLiteral {
    chars: Vec<CharMatch>,
}

impl CiLiteral {
    pub fn new(literal: &str) -> CiLiteral {
        CiLiteral {
            chars: literal.chars().map(CharMatch::new).collect(),
        }
    }

    /// The end of a match starting at byte `at` (a char boundary), if there is one. Every
    /// pattern character consumes exactly one text character.
    pub fn match_at(&self, text: &str, at: usize) -> Option<usize> {
        let mut rest = text.get(at..)?.char_indices();
        let mut end = at;
        for m in &self.chars {
            let (i, c) = rest.next()?;
            if !m.matches(c) {
                return None;
            }
            end = at + i + c.len_utf8();
        }
        Some(end)
    }

    /// Start positions tried by a search: every char boundary, and the end of the text.
    fn starts(text: &str) -> impl Iterator<Item = usize> + '_ {
        text.char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(text.len()))
    }

    /// `re.search(literal, text, re.IGNORECASE) is not None`.
    pub fn is_match(&self, text: &str) -> bool {
        Self::starts(text).any(|at| self.match_at(text, at).is_some())
    }

    /// `len(re.findall(literal, text, re.IGNORECASE))`: non-overlapping, leftmost first. An
    /// empty literal matches at every position, as in Python.
    pub fn count(&self, text: &str) -> usize {
        if self.chars.is_empty() {
            return text.chars().count() + 1;
        }
        let mut count = 0;
        let mut next_allowed = 0;
        for at in Self::starts(text) {
            if at < next_allowed {
                continue;
            }
            if let Some(end) = self.match_at(text, at) {
                count += 1;
                next_allowed = end;
            }
        }
        count
    }

    /// Match spans `(start, end)` at every start position (overlapping), in order: what a
    /// backtracking search with extra conditions around the literal would try.
    pub fn all_spans<'t>(&'t self, text: &'t str) -> impl Iterator<Item = (usize, usize)> + 't {
        Self::starts(text).filter_map(move |at| self.match_at(text, at).map(|end| (at, end)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_ignorecase_equivalences() {
        let i = CiLiteral::new("intern");
        assert!(i.is_match("İntern"));
        assert!(i.is_match("ıNTERN"));
        assert!(CiLiteral::new("waste").is_match("waſte"));
        assert!(CiLiteral::new("kin").is_match("\u{212a}IN"));
        assert!(CiLiteral::new("σ").is_match("ς"));
        // Not cased: exact only (ß has no single-character case partner in Python's view
        // of lowercase, but it IS cased since its uppercase starts with 'S').
        assert!(!CiLiteral::new("-").is_match("_"));
        assert!(!CiLiteral::new("a").is_match("b"));
    }

    #[test]
    fn counting_is_non_overlapping() {
        assert_eq!(CiLiteral::new("aa").count("aaaaa"), 2);
        assert_eq!(CiLiteral::new("the").count("The other one is there."), 3);
        assert_eq!(CiLiteral::new("").count("abc"), 4);
        assert_eq!(CiLiteral::new("x").count(""), 0);
    }
}
