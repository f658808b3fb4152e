//! `length_constraints:*`: words, sentences, `***` paragraphs and the n-th paragraph's first
//! word.

use crate::pytext::{self, SPACE_CLASS};
use crate::{static_regex, Relation};

/// Number of `\w+` runs as `nltk.tokenize.RegexpTokenizer(r"\w+")` finds them: "don't" is
/// two words, "e-mail" two, "3.5" two, "snake_case" one, and a CJK run without spaces one.
///
/// NLTK 3.10 (the pinned reference) compiles tokenizer patterns with the third-party `regex`
/// module, whose Unicode `\w` includes combining marks, exactly like the `regex` crate's
/// `\w` (they agree on every character Python 3.11 knows), so "हिन्दी" is one word. Older NLTK
/// used the standard `re`, which splits such words at their marks ([`pytext::word_runs`]
/// counts that way).
pub(crate) fn count_words(text: &str) -> usize {
    static_regex!(r"\w+").map_or(0, |re| re.find_iter(text).count())
}

pub(crate) fn number_words(response: &str, num_words: usize, relation: Relation) -> bool {
    relation.holds(count_words(response), num_words)
}

/// Sentences as NLTK's English Punkt model splits the raw response.
pub(crate) fn number_sentences(response: &str, num_sentences: usize, relation: Relation) -> bool {
    relation.holds(quester_punkt::sentences(response).len(), num_sentences)
}

/// Splits on `***` with at most one whitespace character absorbed on each side (the divider
/// need not be on its own line). Blank first and last pieces are not counted, a blank middle
/// piece fails at once, and the count must EQUAL `num_paragraphs`.
pub(crate) fn number_paragraphs(response: &str, num_paragraphs: usize) -> bool {
    let Some(re) = static_regex!(&format!(r"{SPACE_CLASS}?\*\*\*{SPACE_CLASS}?")) else {
        return false;
    };
    let pieces: Vec<&str> = re.split(response).collect();
    let last = pieces.len().saturating_sub(1);
    let mut count = pieces.len();
    for (i, piece) in pieces.iter().enumerate() {
        if pytext::strip(piece).is_empty() {
            if i == 0 || i == last {
                count -= 1;
            } else {
                return false;
            }
        }
    }
    count == num_paragraphs
}

/// Paragraphs are the pieces between literal "\n\n" that are non-blank; their number must
/// EQUAL `num_paragraphs`, and the `nth_paragraph`-th raw piece (blank pieces keep their
/// positions) must be non-blank and start with `first_word`: its first whitespace token, less
/// leading `'` then `"`, cut at the first of `. , ? ! ' "`, lowercased.
pub(crate) fn nth_paragraph_first_word(
    response: &str,
    num_paragraphs: usize,
    nth_paragraph: usize,
    first_word: &str,
) -> bool {
    let pieces: Vec<&str> = response.split("\n\n").collect();
    let count = pieces
        .iter()
        .filter(|p| !pytext::strip(p).is_empty())
        .count();
    if nth_paragraph > count {
        return false;
    }
    // Python indexes `paragraphs[n - 1]`; n = 0 would be the last piece.
    let index = if nth_paragraph == 0 {
        pieces.len() - 1
    } else {
        nth_paragraph - 1
    };
    let paragraph = pieces.get(index).map_or("", |p| pytext::strip(p));
    let Some(token) = pytext::split_whitespace(paragraph).next() else {
        return false;
    };
    let token = token.trim_start_matches('\'').trim_start_matches('"');
    let word: String = token
        .chars()
        .take_while(|c| !matches!(c, '.' | ',' | '?' | '!' | '\'' | '"'))
        .flat_map(char::to_lowercase)
        .collect();
    count == num_paragraphs && word == pytext::lower(first_word)
}
