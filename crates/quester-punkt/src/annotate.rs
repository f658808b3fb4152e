//! Punkt's two annotation passes over word tokens (NLTK's `_annotate_first_pass` and
//! `_annotate_second_pass`), deciding which period-final tokens end a sentence.

use crate::params::{Params, ORTHO_BEG_LC, ORTHO_LC, ORTHO_MID_UC, ORTHO_UC};
use crate::token::{Token, NUMBER_TYPE};

/// First pass, on the token alone: `.`, `?`, `!` break; runs of periods are ellipses; a
/// period-final word is an abbreviation when known (also after its last hyphen), else a break.
fn first_pass(tok: &mut Token<'_>, params: &Params) {
    let t = tok.tok;
    if matches!(t, "." | "?" | "!") {
        tok.sentbreak = true;
    } else if tok.is_ellipsis() {
        tok.ellipsis = true;
    } else if tok.period_final && !t.ends_with("..") {
        let base = t[..t.len() - 1].to_lowercase();
        let after_hyphen = base.rsplit('-').next().unwrap_or(&base);
        if params.is_abbrev(&base) || params.is_abbrev(after_hyphen) {
            tok.abbr = true;
        } else {
            tok.sentbreak = true;
        }
    }
}

/// What the orthographic heuristic says about a token starting a sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Starter {
    Yes,
    No,
    Unknown,
}

/// NLTK's `_ortho_heuristic` (Kiss & Strunk 4.1.1): capitalised but seen lower case and never
/// capitalised mid-sentence starts one; lower case and seen capitalised, or never seen lower
/// case at a sentence start, does not.
fn ortho_heuristic(tok: &Token<'_>, params: &Params) -> Starter {
    if matches!(tok.tok, ";" | ":" | "," | "." | "!" | "?") {
        return Starter::No;
    }
    let ortho = params.ortho(tok.type_no_sentperiod());
    if tok.first_upper() && ortho & ORTHO_LC != 0 && ortho & ORTHO_MID_UC == 0 {
        return Starter::Yes;
    }
    if tok.first_lower() && (ortho & ORTHO_UC != 0 || ortho & ORTHO_BEG_LC == 0) {
        return Starter::No;
    }
    Starter::Unknown
}

/// Second pass on a period-final token given the next one (NLTK's `_second_pass_annotation`):
/// collocations (4.1.2), abbreviations and ellipses followed by a sentence starter (4.2), and
/// initials and ordinals followed by a non-starter (4.3).
fn second_pass(tok: &mut Token<'_>, next: &Token<'_>, params: &Params) {
    if !tok.period_final {
        return;
    }
    let is_initial = tok.is_initial();
    let next_typ = next.type_no_sentperiod();
    if params.is_collocation(tok.type_no_period(), next_typ) {
        tok.sentbreak = false;
        tok.abbr = true;
        return;
    }
    if (tok.abbr || tok.ellipsis) && !is_initial {
        if ortho_heuristic(next, params) == Starter::Yes {
            tok.sentbreak = true;
            return;
        }
        if next.first_upper() && params.is_sent_starter(next_typ) {
            tok.sentbreak = true;
            return;
        }
    }
    if is_initial || tok.type_no_period() == NUMBER_TYPE {
        let starter = ortho_heuristic(next, params);
        if starter == Starter::No {
            tok.sentbreak = false;
            tok.abbr = true;
            return;
        }
        if starter == Starter::Unknown
            && is_initial
            && next.first_upper()
            && params.ortho(next_typ) & ORTHO_LC == 0
        {
            tok.sentbreak = false;
            tok.abbr = true;
        }
    }
}

/// Both passes over a token sequence. Each token's second pass sees the next token as the
/// first pass left it, as NLTK's chained generators do.
pub(crate) fn annotate(tokens: &mut [Token<'_>], params: &Params) {
    for tok in tokens.iter_mut() {
        first_pass(tok, params);
    }
    for i in 1..tokens.len() {
        let (head, tail) = tokens.split_at_mut(i);
        second_pass(&mut head[i - 1], &tail[0], params);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaks(words: &[&str]) -> Vec<bool> {
        let params = Params::english();
        let mut toks: Vec<Token> = words.iter().map(|w| Token::new(w)).collect();
        annotate(&mut toks, &params);
        toks.iter().map(|t| t.sentbreak).collect()
    }

    #[test]
    fn abbreviations_and_breaks() {
        assert_eq!(breaks(&["Mr.", "Smith"]), [false, false]);
        assert_eq!(breaks(&["home.", "He"]), [true, false]);
        assert_eq!(breaks(&["U.S.", "However"]), [true, false]);
        assert_eq!(breaks(&["J.", "Bach"]), [false, false]);
        assert_eq!(breaks(&["3.", "then"]), [false, false]);
        assert_eq!(breaks(&["ex-gen.", "x"]), [false, false]);
        assert_eq!(breaks(&["?", "a"]), [true, false]);
    }
}
