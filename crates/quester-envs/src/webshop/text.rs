//! The search analyser: a Lucene `EnglishAnalyzer`-like chain. Standard tokenisation (the word
//! rules of Unicode UAX #29, simplified), possessive `'s` removal, lower-casing, Lucene's English
//! stop-word set, then the original Porter stemmer (as Lucene's `PorterStemFilter`).

use super::porter::porter_stem;
use std::collections::HashMap;

/// Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET` (33 words).
pub const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// Lucene's StandardTokenizer drops nothing shorter, but splits tokens longer than this.
const MAX_TOKEN_CHARS: usize = 255;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    /// Joins two letters (`:` and friends).
    MidLetter,
    /// Joins two letters or two digits (`.`, apostrophes).
    MidNumLet,
    /// Joins two digits (`,`, `;`).
    MidNum,
    /// `_`: glues to anything word-like on either side.
    ExtendNumLet,
    /// Ideographs, Hiragana: one token per character.
    Ideograph,
    /// Combining marks, joiners, variation selectors: part of the preceding character (UAX #29
    /// rule WB4).
    Extend,
    Other,
}

fn class(c: char) -> Class {
    match c {
        '_' | '\u{203F}' | '\u{2040}' | '\u{2054}' | '\u{FE33}' | '\u{FE34}' | '\u{FE4D}'
        | '\u{FE4E}' | '\u{FE4F}' | '\u{FF3F}' => Class::ExtendNumLet,
        ':' | '\u{00B7}' | '\u{0387}' | '\u{05F4}' | '\u{2027}' | '\u{FE13}' | '\u{FE55}'
        | '\u{FF1A}' => Class::MidLetter,
        '.' | '\'' | '\u{2018}' | '\u{2019}' | '\u{2024}' | '\u{FE52}' | '\u{FF07}'
        | '\u{FF0E}' => Class::MidNumLet,
        ',' | ';' | '\u{037E}' | '\u{0589}' | '\u{066C}' | '\u{FE50}' | '\u{FE54}' | '\u{FF0C}'
        | '\u{FF1B}' => Class::MidNum,
        '\u{0300}'..='\u{036F}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{1DC0}'..='\u{1DFF}'
        | '\u{200C}'
        | '\u{200D}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{FE20}'..='\u{FE2F}' => Class::Extend,
        '\u{3040}'..='\u{309F}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2FFFF}' => Class::Ideograph,
        c if c.is_numeric() => Class::Digit,
        c if c.is_alphabetic() => Class::Letter,
        _ => Class::Other,
    }
}

fn joins(mid: Class, before: Class, after: Class) -> bool {
    match mid {
        Class::MidLetter => before == Class::Letter && after == Class::Letter,
        Class::MidNumLet => {
            (before == Class::Letter && after == Class::Letter)
                || (before == Class::Digit && after == Class::Digit)
        }
        Class::MidNum => before == Class::Digit && after == Class::Digit,
        _ => false,
    }
}

fn is_word(c: Class) -> bool {
    matches!(c, Class::Letter | Class::Digit | Class::ExtendNumLet)
}

/// Standard tokenisation: words as UAX #29 delimits them (`don't`, `3.5`, `1,000`, `u.s.a`,
/// `32oz` stay whole; hyphens, slashes and spaces split), keeping the original case.
pub fn standard_tokens(text: &str) -> Vec<String> {
    // WB4: extending characters attach to the character before them and are otherwise ignored
    // by the rules, so the rules run over base characters ("units": a char range + its class).
    let chars: Vec<char> = text.chars().collect();
    let mut units: Vec<(usize, usize, Class)> = Vec::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        let cl = class(c);
        match (cl, units.last_mut()) {
            (Class::Extend, Some(prev)) => prev.1 = i + 1,
            (Class::Extend, None) => {}
            _ => units.push((i, i + 1, cl)),
        }
    }
    let text_of =
        |a: usize, b: usize| -> String { chars[units[a].0..units[b - 1].1].iter().collect() };
    let mut out = Vec::new();
    let mut i = 0;
    while i < units.len() {
        let c = units[i].2;
        if c == Class::Ideograph {
            out.push(text_of(i, i + 1));
            i += 1;
            continue;
        }
        if !is_word(c) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i + 1; // exclusive
        loop {
            if end < units.len() && is_word(units[end].2) {
                end += 1;
                continue;
            }
            if end + 1 < units.len() && joins(units[end].2, units[end - 1].2, units[end + 1].2) {
                end += 2;
                continue;
            }
            break;
        }
        if units[start..end]
            .iter()
            .any(|u| matches!(u.2, Class::Letter | Class::Digit))
        {
            let mut a = start;
            while a < end {
                let b = (a + MAX_TOKEN_CHARS).min(end);
                out.push(text_of(a, b));
                a = b;
            }
        }
        i = end;
    }
    out
}

/// Lucene's EnglishPossessiveFilter: drops a trailing `'s` (any apostrophe, either case of s).
fn strip_possessive(token: &str) -> &str {
    for suffix in [
        "'s",
        "'S",
        "\u{2019}s",
        "\u{2019}S",
        "\u{FF07}s",
        "\u{FF07}S",
    ] {
        if let Some(stem) = token.strip_suffix(suffix) {
            return stem;
        }
    }
    token
}

/// The full analyser: the terms that are indexed for `text` (and searched for a query).
pub fn analyze(text: &str) -> Vec<String> {
    analyze_with(text, &mut |w| porter_stem(w))
}

/// [`analyze`] with a memo of stems, for indexing many documents (the vocabulary is much smaller
/// than the token count).
pub fn analyze_cached(text: &str, memo: &mut HashMap<String, String>) -> Vec<String> {
    analyze_with(text, &mut |w| {
        if let Some(s) = memo.get(w) {
            return s.clone();
        }
        let s = porter_stem(w);
        memo.insert(w.to_string(), s.clone());
        s
    })
}

fn analyze_with(text: &str, stem: &mut dyn FnMut(&str) -> String) -> Vec<String> {
    standard_tokens(text)
        .iter()
        .filter_map(|t| {
            let lower = strip_possessive(t).to_lowercase();
            if lower.is_empty() || STOP_WORDS.contains(&lower.as_str()) {
                return None;
            }
            Some(stem(&lower))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_tokenizer_word_rules() {
        assert_eq!(
            standard_tokens("Women's 3.5 oz, 1,000 pcs; u.s.a-made 32oz x-large."),
            vec!["Women's", "3.5", "oz", "1,000", "pcs", "u.s.a", "made", "32oz", "x", "large"]
        );
        assert_eq!(
            standard_tokens("description:solid wood/fir __ a_b"),
            vec!["description:solid", "wood", "fir", "a_b"]
        );
        assert_eq!(standard_tokens("茶叶 tea"), vec!["茶", "叶", "tea"]);
        // Combining marks stay inside the word.
        assert_eq!(
            standard_tokens("e\u{301}te\u{301} cafe"),
            vec!["e\u{301}te\u{301}", "cafe"]
        );
        assert!(standard_tokens("").is_empty());
    }

    #[test]
    fn analyzer_drops_stop_words_possessives_and_stems() {
        assert_eq!(
            analyze("The Women's Running Shoes for the Gym"),
            vec!["women", "run", "shoe", "gym"]
        );
    }
}
