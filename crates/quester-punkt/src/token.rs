//! A word token with Punkt's annotations (NLTK's `PunktToken`).

use crate::chars::{is_py_lower, is_py_upper, is_regex_digit, is_regex_word};

/// The type NLTK gives every number-like token (`_RE_NUMERIC`), so all numbers share statistics.
pub(crate) const NUMBER_TYPE: &str = "##number##";

#[derive(Debug, Clone)]
pub(crate) struct Token<'a> {
    pub tok: &'a str,
    /// Lower-cased token, or [`NUMBER_TYPE`] for a number.
    pub typ: String,
    pub period_final: bool,
    pub sentbreak: bool,
    pub abbr: bool,
    pub ellipsis: bool,
}

/// NLTK's `_RE_NUMERIC`, `^-?[\.,]?\d[\d,\.-]*\.?$`: an optional minus, an optional leading
/// period or comma, a digit, then only digits, commas, periods and hyphens.
fn is_numeric(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    let s = s.strip_prefix(['.', ',']).unwrap_or(s);
    let mut chars = s.chars();
    chars.next().is_some_and(is_regex_digit)
        && chars.all(|c| is_regex_digit(c) || matches!(c, ',' | '.' | '-'))
}

impl<'a> Token<'a> {
    pub fn new(tok: &'a str) -> Token<'a> {
        let lower = tok.to_lowercase();
        let typ = if is_numeric(&lower) {
            NUMBER_TYPE.to_owned()
        } else {
            lower
        };
        Token {
            tok,
            typ,
            period_final: tok.ends_with('.'),
            sentbreak: false,
            abbr: false,
            ellipsis: false,
        }
    }

    /// The type without its final period (a lone "." keeps it).
    pub fn type_no_period(&self) -> &str {
        match self.typ.strip_suffix('.') {
            Some(rest) if !rest.is_empty() => rest,
            _ => &self.typ,
        }
    }

    /// The type without the final period that marks a sentence break.
    pub fn type_no_sentperiod(&self) -> &str {
        if self.sentbreak {
            self.type_no_period()
        } else {
            &self.typ
        }
    }

    pub fn first_upper(&self) -> bool {
        self.tok.chars().next().is_some_and(is_py_upper)
    }

    pub fn first_lower(&self) -> bool {
        self.tok.chars().next().is_some_and(is_py_lower)
    }

    /// Two or more periods and nothing else (`_RE_ELLIPSIS`, `\.\.+$`).
    pub fn is_ellipsis(&self) -> bool {
        self.tok.len() >= 2 && self.tok.bytes().all(|b| b == b'.')
    }

    /// One letter and a period (`_RE_INITIAL`, `[^\W\d]\.$`).
    pub fn is_initial(&self) -> bool {
        let mut chars = self.tok.chars();
        matches!(
            (chars.next(), chars.next(), chars.next()),
            (Some(c), Some('.'), None) if is_regex_word(c) && !is_regex_digit(c)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types() {
        for num in ["3", "3.5", "-3.5", ".5", ",5", "1,000.", "10-20", "5-", "٣"] {
            assert_eq!(Token::new(num).typ, NUMBER_TYPE, "{num}");
        }
        for not_num in ["--5", "a1", "1a", "1st", ".", "-", "1990s"] {
            assert_ne!(Token::new(not_num).typ, NUMBER_TYPE, "{not_num}");
        }
        assert_eq!(Token::new("Mr.").typ, "mr.");
        assert_eq!(Token::new("Mr.").type_no_period(), "mr");
        assert_eq!(Token::new(".").type_no_period(), ".");
        assert_eq!(Token::new("3.").type_no_period(), NUMBER_TYPE);
    }

    #[test]
    fn shapes() {
        assert!(Token::new("J.").is_initial() && Token::new("é.").is_initial());
        assert!(!Token::new("3.").is_initial() && !Token::new("JK.").is_initial());
        assert!(Token::new("..").is_ellipsis() && !Token::new(".").is_ellipsis());
        assert!(Token::new("Émile").first_upper() && Token::new("ß").first_lower());
        assert!(!Token::new("中").first_upper() && !Token::new("中").first_lower());
    }
}
