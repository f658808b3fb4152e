//! Sentence spans (NLTK's `PunktSentenceTokenizer.span_tokenize`): find each `.`, `?`, `!`
//! that could end a sentence, decide it on the words around it, then move closing quotes and
//! brackets after a break back onto the sentence they close.

use crate::annotate::annotate;
use crate::chars::{is_regex_space as is_space, py_rstrip};
use crate::params::Params;
use crate::token::Token;
use crate::words::{is_non_word, text_words};

/// A candidate sentence end (a match of NLTK's `period_context_re`). Byte offsets.
#[derive(Debug, Clone, Copy)]
struct EndMatch {
    /// The `.`, `?` or `!`.
    start: usize,
    end: usize,
    /// The token after it, when whitespace separates them (`next_tok`).
    next_tok: Option<usize>,
    /// End of what follows: that token, or the single non-word character (`after_tok`).
    after_end: usize,
}

/// Every end character followed by a non-word character, or by whitespace and a token.
fn end_matches(text: &str) -> Vec<EndMatch> {
    let mut out = Vec::new();
    for (start, c) in text.char_indices() {
        if !matches!(c, '.' | '?' | '!') {
            continue;
        }
        let end = start + 1;
        let rest = &text[end..];
        match rest.chars().next() {
            Some(n) if is_non_word(n) => out.push(EndMatch {
                start,
                end,
                next_tok: None,
                after_end: end + n.len_utf8(),
            }),
            Some(n) if is_space(n) => {
                let tok = end + rest.len() - rest.trim_start_matches(is_space).len();
                let tail = &text[tok..];
                let tok_len = tail.find(is_space).unwrap_or(tail.len());
                if tok_len > 0 {
                    out.push(EndMatch {
                        start,
                        end,
                        next_tok: Some(tok),
                        after_end: tok + tok_len,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// Each candidate with the text it is decided on: the word before it through what follows
/// (NLTK's `_match_potential_end_contexts`). A run like "!!!" yields only its last candidate,
/// whose context then starts at the word before the run.
fn end_contexts(text: &str) -> Vec<(EndMatch, &str)> {
    let mut out = Vec::new();
    let mut prev: Option<(EndMatch, usize, usize)> = None; // match, word start, word end
    for m in end_matches(text) {
        let (prev_start, prev_end) = prev.map_or((0, 0), |(_, s, e)| (s, e));
        let before = &text[prev_end..m.start];
        // NLTK takes the last ASCII whitespace; one at index 0 counts as none at all.
        let word_start = match before.rfind([' ', '\t', '\n', '\r', '\x0b', '\x0c']) {
            Some(i) if i > 0 => prev_end + i + 1,
            _ => prev_start,
        };
        if let Some((pm, ps, pe)) = prev {
            if pe <= word_start {
                out.push((pm, &text[ps..pm.after_end]));
            }
        }
        prev = Some((m, word_start, m.start));
    }
    if let Some((pm, ps, _)) = prev {
        out.push((pm, &text[ps..pm.after_end]));
    }
    out
}

/// Whether any word of `context` but the last is annotated as a sentence break
/// (NLTK's `text_contains_sentbreak`).
fn contains_sentbreak(context: &str, params: &Params) -> bool {
    let mut tokens: Vec<Token> = text_words(context).into_iter().map(Token::new).collect();
    annotate(&mut tokens, params);
    tokens
        .split_last()
        .is_some_and(|(_, init)| init.iter().any(|t| t.sentbreak))
}

/// Sentence spans before realignment (NLTK's `_slices_from_text`); the last one stops before
/// trailing whitespace.
fn raw_spans(text: &str, params: &Params) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut last_break = 0;
    for (m, context) in end_contexts(text) {
        if contains_sentbreak(context, params) {
            spans.push((last_break, m.end));
            last_break = m.next_tok.unwrap_or(m.end);
        }
    }
    spans.push((last_break, py_rstrip(text).len()));
    spans
}

/// Closing quotes and brackets at the start of `s` that belong to the sentence before it:
/// their byte length and the length including the whitespace after them
/// (NLTK's `re_boundary_realignment`, matched lazily).
fn realignment(s: &str) -> Option<(usize, usize)> {
    let mut closers = 0;
    for c in s.chars() {
        if closers > 0 {
            let rest = &s[closers..];
            if c.is_whitespace() {
                return Some((closers, s.len() - rest.trim_start_matches(is_space).len()));
            }
            if rest.starts_with("--") {
                return Some((closers, closers));
            }
        }
        if !matches!(
            c,
            '"' | '\''
                | ')'
                | ']'
                | '}'
                | '\u{2018}'
                | '\u{2019}'
                | '\u{201C}'
                | '\u{201D}'
                | '\u{AB}'
                | '\u{BB}'
        ) {
            return None;
        }
        closers += c.len_utf8();
    }
    (closers > 0).then_some((closers, closers))
}

/// NLTK's `_realign_boundaries`: a sentence that starts with closers gives them to the one
/// before; empty spans are dropped.
fn realign(text: &str, spans: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(spans.len());
    let mut shift = 0;
    for (i, &(start, stop)) in spans.iter().enumerate() {
        let start = start + shift;
        let moved = spans.get(i + 1).and_then(|&(next_start, next_stop)| {
            let next = text.get(next_start..next_stop).unwrap_or("");
            realignment(next).map(|(kept, skipped)| (next_start + kept, skipped))
        });
        match moved {
            Some((new_stop, skipped)) => {
                out.push((start, new_stop));
                shift = skipped;
            }
            None => {
                shift = 0;
                if start < stop {
                    out.push((start, stop));
                }
            }
        }
    }
    out
}

/// Byte spans of the sentences of `text`.
pub(crate) fn sentence_spans(text: &str, params: &Params) -> Vec<(usize, usize)> {
    realign(text, &raw_spans(text, params))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contexts(text: &str) -> Vec<&str> {
        end_contexts(text).into_iter().map(|(_, c)| c).collect()
    }

    #[test]
    fn contexts_like_nltk() {
        assert_eq!(contexts("Very bad acting!!! I promise."), ["acting!!! I"]);
        assert_eq!(contexts("One. Two.) Three"), ["One. Two.)", "Two.)"]);
        assert_eq!(contexts("end."), Vec::<&str>::new());
    }

    #[test]
    fn realignment_takes_closers_lazily() {
        assert_eq!(realignment(") Next."), Some((1, 2)));
        assert_eq!(realignment("\")  Next."), Some((2, 4)));
        assert_eq!(realignment(")--x"), Some((1, 1)));
        assert_eq!(realignment(")"), Some((1, 1)));
        assert_eq!(realignment(")x"), None);
        assert_eq!(realignment("x)"), None);
        assert_eq!(realignment(""), None);
    }
}
