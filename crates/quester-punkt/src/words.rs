//! Punkt's word tokenizer (NLTK's `PunktLanguageVars.word_tokenize`): splits off punctuation
//! other than periods, keeping "U.S." or "end." whole. NLTK's regex needs lookaheads, so the
//! same leftmost, lazy scan is written out by hand.

use crate::chars::{is_py_space, is_regex_space as is_space};

/// Characters that cannot appear within words (`_re_non_word_chars`); they end a word.
pub(crate) fn is_non_word(c: char) -> bool {
    matches!(
        c,
        ')' | '"'
            | ';'
            | '}'
            | ']'
            | '*'
            | ':'
            | '@'
            | '\''
            | '('
            | '{'
            | '['
            | '\u{2018}'
            | '\u{2019}'
            | '\u{201C}'
            | '\u{201D}'
            | '\u{AB}'
            | '\u{BB}'
            | '?'
            | '!'
    )
}

/// Characters that cannot start a word (the complement of `_re_word_start`).
fn cannot_start_word(c: char) -> bool {
    matches!(
        c,
        '(' | '"'
            | '`'
            | '{'
            | '['
            | ':'
            | ';'
            | '&'
            | '#'
            | '*'
            | '@'
            | ')'
            | '}'
            | ']'
            | '-'
            | ','
    )
}

/// The end of the multi-character punctuation starting at `i` (`_re_multi_char_punct`:
/// `-{2,}`, `\.{2,}` or `(?:\.\s){2,}\.`, tried in that order).
fn multi_char_end(cs: &[char], i: usize) -> Option<usize> {
    let at = |j: usize| cs.get(j).copied();
    match (at(i)?, at(i + 1)) {
        ('-', Some('-')) => Some(i + cs[i..].iter().take_while(|&&c| c == '-').count()),
        ('.', Some('.')) => Some(i + cs[i..].iter().take_while(|&&c| c == '.').count()),
        ('.', _) => {
            // Greedy ". " repetitions, then a period; backtrack one repetition if needed.
            let mut reps = 0;
            let mut j = i;
            while at(j) == Some('.') && at(j + 1).is_some_and(is_space) {
                reps += 1;
                j += 2;
            }
            if reps >= 2 && at(j) == Some('.') {
                Some(j + 1)
            } else if reps >= 3 {
                Some(j - 1)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Whether a word may end before position `j`: whitespace, the end, a non-word character,
/// multi-character punctuation, or a comma followed by any of those.
fn word_ends_before(cs: &[char], j: usize) -> bool {
    let ends_here = |j: usize| match cs.get(j) {
        None => true,
        Some(&c) => is_space(c) || is_non_word(c) || multi_char_end(cs, j).is_some(),
    };
    ends_here(j) || (cs[j] == ',' && ends_here(j + 1))
}

/// Appends the word tokens of one line (no `\n` inside) to `out`.
pub(crate) fn line_words<'a>(line: &'a str, out: &mut Vec<&'a str>) {
    let cs: Vec<char> = line.chars().collect();
    let mut offsets: Vec<usize> = line.char_indices().map(|(b, _)| b).collect();
    offsets.push(line.len());
    let mut i = 0;
    while i < cs.len() {
        if is_space(cs[i]) {
            i += 1;
            continue;
        }
        let end = if let Some(end) = multi_char_end(&cs, i) {
            end
        } else if cannot_start_word(cs[i]) {
            i + 1
        } else {
            let mut j = i + 1;
            while !word_ends_before(&cs, j) {
                j += 1;
            }
            j
        };
        out.push(&line[offsets[i]..offsets[end]]);
        i = end;
    }
}

/// Word tokens of a text, line by line (`PunktBaseClass._tokenize_words`; the line and
/// paragraph flags it also records are only used in training). A line that Python's
/// `str.strip` empties is skipped, even if it holds U+001C..U+001F, which the regex would
/// otherwise return as tokens.
pub(crate) fn text_words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.split('\n') {
        if !line.chars().all(is_py_space) {
            line_words(line, &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<&str> {
        text_words(s)
    }

    #[test]
    fn splits_like_nltk() {
        assert_eq!(words("Hello, world."), ["Hello", ",", "world."]);
        assert_eq!(
            words("U.S. (and) 1,000"),
            ["U.S.", "(", "and", ")", "1,000"]
        );
        assert_eq!(
            words("what?! \"end.\""),
            ["what", "?", "!", "\"", "end.", "\""]
        );
        assert_eq!(words("wait... no"), ["wait", "...", "no"]);
        assert_eq!(words("a . . . b"), ["a", ". . .", "b"]);
        assert_eq!(words("a . . b"), ["a", ".", ".", "b"]);
        assert_eq!(words("x--y -- z"), ["x", "--", "y", "--", "z"]);
        assert_eq!(words("a,b, c,"), ["a,b", ",", "c", ","]);
        assert_eq!(words("one\ntwo"), ["one", "two"]);
        assert_eq!(words("a\x1c\n\x1c\x1d\nb"), ["a\x1c", "b"]);
        assert_eq!(words("#tag @me -x"), ["#", "tag", "@", "me", "-", "x"]);
    }
}
