//! NLTK's `NLTKWordTokenizer` (the improved Treebank tokenizer of `nltk/tokenize/destructive.py`):
//! a cascade of substitutions that pads punctuation with spaces, then a whitespace split.
//! Patterns that Rust's `regex` can express with NLTK's meaning use it; those with lookarounds,
//! `$` before a final newline, or Python's own `\w` are written out by hand.

use std::sync::OnceLock;

use regex::Regex;

use crate::chars::{
    is_py_space, is_re_word, is_regex_space, is_regex_word, regex_digit_class_body,
};

/// The substitutions Rust's `regex` expresses faithfully, compiled once.
struct Rules {
    /// `([«“‘„]|[`]+)` -> ` \1 `
    opening_quotes: Regex,
    /// `([ \(\[{<])(\"|\'{2})` -> `\1 `` `
    quote_after_opener: Regex,
    /// `([:,])([^\d])` -> ` \1 \2`, with the `regex` module's `\d`.
    comma_colon: Regex,
    /// `([:,])$` -> ` \1 `, where `$` may also stand before a final newline.
    comma_colon_at_end: Regex,
    /// `\.{2,}`, `[;@#$%&]`, `[\u2012-\u2015]`, `[?!]`, `[*]`, brackets -> ` \g<0> `
    ellipsis: Regex,
    symbols: Regex,
    dashes: Regex,
    question_exclaim: Regex,
    star: Regex,
    brackets: Regex,
    /// `([^'])' ` -> `\1 ' `
    quote_space: Regex,
    /// `([»”’])` -> ` \1 `
    closing_quotes: Regex,
    /// `\s+` -> ` `
    spaces: Regex,
    /// `([^' ])('[sS]|'[mM]|'[dD]|') ` and `([^' ])('ll|'LL|...|n't|N'T) ` -> `\1 \2 `
    clitics: Regex,
    clitics_long: Regex,
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("valid Treebank pattern");
        Rules {
            opening_quotes: re("([«“‘„]|`+)"),
            quote_after_opener: re(r#"([ (\[{<])("|'')"#),
            comma_colon: re(&format!("([:,])([^{}])", regex_digit_class_body())),
            comma_colon_at_end: re(r"([:,])(\n?)\z"),
            ellipsis: re(r"\.{2,}"),
            symbols: re(r"[;@#$%&]"),
            dashes: re(r"[\x{2012}-\x{2015}]"),
            question_exclaim: re(r"[?!]"),
            star: re(r"\*"),
            brackets: re(r"[\]\[(){}<>]"),
            quote_space: re(r"([^'])' "),
            closing_quotes: re("([»”’])"),
            spaces: re(r"\s+"),
            clitics: re(r"([^' ])('[sS]|'[mM]|'[dD]|') "),
            clitics_long: re(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "),
        }
    })
}

fn sub(re: &Regex, text: String, replacement: &str) -> String {
    match re.replace_all(&text, replacement) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(s) => s,
    }
}

/// Byte offset of every char, plus the text length.
fn offsets(text: &str) -> (Vec<char>, Vec<usize>) {
    let chars = text.chars().collect();
    let mut offs: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
    offs.push(text.len());
    (chars, offs)
}

/// Case-insensitive match of a pattern letter as the `regex` module sees it (`ſ` is an `s`,
/// `İ` an `i`).
fn regex_ci_eq(c: char, p: char) -> bool {
    c == p
        || c == p.to_ascii_uppercase()
        || (p == 's' && c == '\u{17F}')
        || (p == 'i' && c == '\u{130}')
}

/// Case-insensitive match as the stdlib `re` sees it (also `ı` for `i`, `K` for `k`).
fn re_ci_eq(c: char, p: char) -> bool {
    regex_ci_eq(c, p) || (p == 'i' && c == '\u{131}') || (p == 'k' && c == '\u{212A}')
}

/// `(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)` -> `\1 `: an opening single quote
/// before a word is split off, unless it starts a clitic like 's or 're.
fn pad_opening_apostrophes(text: String) -> String {
    if !text.contains('\'') {
        return text;
    }
    const CLITICS: [&str; 8] = ["re", "ve", "ll", "m", "t", "s", "d", "n"];
    let (cs, offs) = offsets(&text);
    let word_at = |j: usize| cs.get(j).copied().is_some_and(is_regex_word);
    let mut out = String::with_capacity(text.len() + 8);
    let mut copied = 0;
    for i in 0..cs.len() {
        if cs[i] != '\'' || (i > 0 && word_at(i - 1)) || !word_at(i + 1) {
            continue;
        }
        let clitic = CLITICS.iter().any(|cl| {
            let n = cl.chars().count();
            cl.chars()
                .enumerate()
                .all(|(k, p)| cs.get(i + 1 + k).is_some_and(|&c| regex_ci_eq(c, p)))
                && !word_at(i + 1 + n)
        });
        if !clitic {
            out.push_str(&text[copied..offs[i + 1]]);
            out.push(' ');
            copied = offs[i + 1];
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The final period: `([^\.])(\.)([\]\)}>"\']*)\s*$`, or with `wide` the possessive variant
/// whose class also holds `»”’` and a space, `([^\.])(\.)([\]\)}>"\'»”’ ]*+)\s*$`
/// (-> `\1 \2 \3 `, where the narrow one gives `\1 \2\3 `). The leftmost period followed only
/// by closers and whitespace is split off and the trailing whitespace dropped.
fn split_final_period(text: String, wide: bool) -> String {
    let closer = |c: char| {
        matches!(c, ']' | ')' | '}' | '>' | '"' | '\'')
            || (wide && matches!(c, '»' | '”' | '’' | ' '))
    };
    let (cs, offs) = offsets(&text);
    let n = cs.len();
    // tail_ok[i]: cs[i..] is closers then whitespace.
    let mut tail_ok = vec![true; n + 1];
    let mut all_space = true;
    for i in (0..n).rev() {
        all_space &= is_regex_space(cs[i]);
        tail_ok[i] = all_space || (closer(cs[i]) && tail_ok[i + 1]);
    }
    let Some(p) =
        (0..n.saturating_sub(1)).find(|&p| cs[p] != '.' && cs[p + 1] == '.' && tail_ok[p + 2])
    else {
        return text;
    };
    let closers_end = p + 2 + cs[p + 2..].iter().take_while(|&&c| closer(c)).count();
    let mut out = String::with_capacity(text.len() + 3);
    out.push_str(&text[..offs[p + 1]]);
    out.push_str(if wide { " . " } else { " ." });
    out.push_str(&text[offs[p + 2]..offs[closers_end]]);
    out.push(' ');
    out
}

/// How a contraction pattern must end.
#[derive(Clone, Copy)]
enum Tail {
    /// `\b`: no word character follows.
    Boundary,
    /// `(?=\s)`: whitespace follows.
    Space,
}

/// The contraction patterns NLTK applies (`MacIntyreContractions.CONTRACTIONS2` and `3`, via
/// the stdlib `re`, case-insensitive): (leading literal space, first part, second part, tail).
/// CONTRACTIONS2 start with `\b`; CONTRACTIONS3 with a space.
const CONTRACTIONS: [(bool, &str, &str, Tail); 10] = [
    (false, "can", "not", Tail::Boundary),
    (false, "d", "'ye", Tail::Boundary),
    (false, "gim", "me", Tail::Boundary),
    (false, "gon", "na", Tail::Boundary),
    (false, "got", "ta", Tail::Boundary),
    (false, "lem", "me", Tail::Boundary),
    (false, "more", "'n", Tail::Boundary),
    (false, "wan", "na", Tail::Space),
    (true, "'t", "is", Tail::Boundary),
    (true, "'t", "was", Tail::Boundary),
];

/// One contraction pattern -> ` \1 \2 `, left to right without overlaps.
fn split_contraction(
    text: String,
    (lead_space, first, second, tail): (bool, &str, &str, Tail),
) -> String {
    let pattern: Vec<char> = first.chars().chain(second.chars()).collect();
    let lower_first = pattern[0];
    if !text.chars().any(|c| re_ci_eq(c, lower_first)) {
        return text;
    }
    let (cs, offs) = offsets(&text);
    let n_first = first.chars().count();
    let match_at = |i: usize| -> Option<usize> {
        let mut j = i;
        if lead_space {
            if cs[j] != ' ' {
                return None;
            }
            j += 1;
        } else if i > 0 && is_re_word(cs[i - 1]) {
            return None;
        }
        for &p in &pattern {
            if !cs.get(j).is_some_and(|&c| re_ci_eq(c, p)) {
                return None;
            }
            j += 1;
        }
        let ok = match tail {
            Tail::Boundary => !cs.get(j).copied().is_some_and(is_re_word),
            Tail::Space => cs.get(j).copied().is_some_and(is_py_space),
        };
        ok.then_some(j)
    };
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < cs.len() {
        let Some(end) = match_at(i) else {
            i += 1;
            continue;
        };
        let g = if lead_space { i + 1 } else { i };
        out.push_str(&text[copied..offs[i]]);
        out.push(' ');
        out.push_str(&text[offs[g]..offs[g + n_first]]);
        out.push(' ');
        out.push_str(&text[offs[g + n_first]..offs[end]]);
        out.push(' ');
        copied = offs[end];
        i = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// NLTK's `NLTKWordTokenizer().tokenize(sentence)` (no parenthesis conversion).
pub(crate) fn treebank_tokenize(sentence: &str) -> Vec<String> {
    let r = rules();
    // Starting quotes.
    let mut text = sub(&r.opening_quotes, sentence.to_owned(), " ${1} ");
    if let Some(rest) = text.strip_prefix('"') {
        text = format!("``{rest}");
    }
    text = text.replace("``", " `` ");
    text = sub(&r.quote_after_opener, text, "${1} `` ");
    text = pad_opening_apostrophes(text);
    // Punctuation.
    text = split_final_period(text, true);
    text = sub(&r.comma_colon, text, " ${1} ${2}");
    text = sub(&r.comma_colon_at_end, text, " ${1} ${2}");
    text = sub(&r.ellipsis, text, " ${0} ");
    text = sub(&r.symbols, text, " ${0} ");
    text = sub(&r.dashes, text, " ${0} ");
    text = split_final_period(text, false);
    text = sub(&r.question_exclaim, text, " ${0} ");
    text = sub(&r.quote_space, text, "${1} ' ");
    text = sub(&r.star, text, " ${0} ");
    // Parentheses, brackets and double dashes.
    text = sub(&r.brackets, text, " ${0} ");
    text = text.replace("--", " -- ");
    // Ending quotes.
    text = format!(" {text} ");
    text = sub(&r.closing_quotes, text, " ${1} ");
    text = text.replace("''", " '' ").replace('"', " '' ");
    text = sub(&r.spaces, text, " ");
    text = sub(&r.clitics, text, "${1} ${2} ");
    text = sub(&r.clitics_long, text, "${1} ${2} ");
    for contraction in CONTRACTIONS {
        text = split_contraction(text, contraction);
    }
    text.split(is_py_space)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        treebank_tokenize(s)
    }

    #[test]
    fn nltk_docstring_example() {
        let s = "Good muffins cost $3.88 (roughly 3,36 euros)\nin New York.  Please buy me\ntwo of them.\nThanks.";
        assert_eq!(
            toks(s),
            [
                "Good", "muffins", "cost", "$", "3.88", "(", "roughly", "3,36", "euros", ")", "in",
                "New", "York.", "Please", "buy", "me", "two", "of", "them.", "Thanks", "."
            ]
        );
    }

    #[test]
    fn quotes_and_contractions() {
        assert_eq!(
            toks("\"Hi,\" she said."),
            ["``", "Hi", ",", "''", "she", "said", "."]
        );
        assert_eq!(
            toks("I DON'T can't cannot"),
            ["I", "DO", "N'T", "ca", "n't", "can", "not"]
        );
        assert_eq!(
            toks("It's John's 'tis"),
            ["It", "'s", "John", "'s", "'", "tis"]
        );
        assert_eq!(toks("'hello' there"), ["'", "hello", "'", "there"]);
        assert_eq!(toks("wanna go"), ["wan", "na", "go"]);
        assert_eq!(toks("a--b ... c;d"), ["a", "--", "b", "...", "c", ";", "d"]);
        assert_eq!(toks("(end.)"), ["(", "end", ".", ")"]);
    }

    #[test]
    fn contraction_uses_python_word_chars() {
        // `re`'s \b: a combining mark is no word character, so "cannot" still splits.
        assert_eq!(toks("cannot\u{301}"), ["can", "not", "\u{301}"]);
    }
}
