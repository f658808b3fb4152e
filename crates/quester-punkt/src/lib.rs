//! NLTK's Punkt sentence splitter (inference only, with NLTK's English `punkt_tab` parameters)
//! and NLTK's `word_tokenize`, as IFEval uses them.
//!
//! Contract (used by `quester-ifeval`):
//! - [`sentences`] returns the sentences NLTK's `PunktTokenizer("english").tokenize(text)` returns.
//! - [`word_tokenize`] returns the tokens of NLTK's `word_tokenize(text)` (language English,
//!   `preserve_line=False`).
//!
//! Both are checked token for token against NLTK 3.10.4 by `tests/nltk_reference.rs`, whose
//! fixture `scripts/punkt_reference.py` writes. The algorithm is Kiss & Strunk's (2006): word
//! tokens around each candidate period are annotated by type (abbreviations, ellipses, initials,
//! numbers) and then by context (orthographic evidence, collocations, frequent sentence starters).

mod annotate;
mod chars;
mod params;
mod split;
mod token;
#[rustfmt::skip]
mod unicode_tables;
mod word_tokenize;
mod words;

use std::sync::OnceLock;

pub use params::{Params, ParamsError};

/// A Punkt sentence splitter with its parameters.
#[derive(Debug, Clone)]
pub struct Punkt {
    params: Params,
}

impl Punkt {
    /// A splitter using `params`.
    pub fn new(params: Params) -> Punkt {
        Punkt { params }
    }

    /// NLTK's English model, parsed once.
    pub fn english() -> &'static Punkt {
        static ENGLISH: OnceLock<Punkt> = OnceLock::new();
        ENGLISH.get_or_init(|| Punkt::new(Params::english()))
    }

    /// Byte spans of the sentences of `text` (NLTK's `span_tokenize`, realigned).
    pub fn sentence_spans(&self, text: &str) -> Vec<(usize, usize)> {
        split::sentence_spans(text, &self.params)
    }

    /// The sentences of `text` (NLTK's `tokenize`).
    pub fn sentences(&self, text: &str) -> Vec<String> {
        self.sentence_spans(text)
            .into_iter()
            .map(|(start, end)| text[start..end].to_owned())
            .collect()
    }

    /// NLTK's `word_tokenize` with this splitter: Treebank tokens of each sentence.
    pub fn word_tokenize(&self, text: &str) -> Vec<String> {
        self.sentence_spans(text)
            .into_iter()
            .flat_map(|(start, end)| word_tokenize::treebank_tokenize(&text[start..end]))
            .collect()
    }
}

/// The sentences of `text`, as NLTK's English Punkt splits them.
pub fn sentences(text: &str) -> Vec<String> {
    Punkt::english().sentences(text)
}

/// NLTK's `word_tokenize(text)`.
pub fn word_tokenize(text: &str) -> Vec<String> {
    Punkt::english().word_tokenize(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_sentences() {
        assert_eq!(
            sentences("Mr. Smith went to Washington. He arrived on Monday."),
            ["Mr. Smith went to Washington.", "He arrived on Monday."]
        );
        assert_eq!(sentences("(Sent1.) Sent2."), ["(Sent1.)", "Sent2."]);
        assert_eq!(
            sentences("Very bad acting!!! I promise."),
            ["Very bad acting!!!", "I promise."]
        );
        assert_eq!(sentences("  Hi.  Bye.  "), ["  Hi.", "Bye."]);
        assert!(sentences("").is_empty());
        assert!(sentences(" \n\t").is_empty());
    }

    #[test]
    fn hand_worked_tokens() {
        assert_eq!(
            word_tokenize("I DON'T know. Dr. Who?"),
            ["I", "DO", "N'T", "know", ".", "Dr.", "Who", "?"]
        );
        assert!(word_tokenize("").is_empty());
    }
}
