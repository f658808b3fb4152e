//! The 25 checker families (IFEval's instruction ids), how often each is drawn, and which pairs
//! are never drawn together because one makes the other impossible or confusing.

use quester_ifeval::INSTRUCTION_IDS;

/// One IFEval checker family, without arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    EnglishCapital,
    EnglishLowercase,
    CapitalWordFrequency,
    RepeatPrompt,
    TwoResponses,
    NumberPlaceholders,
    Postscript,
    ConstrainedResponse,
    JsonFormat,
    MultipleSections,
    NumberBulletLists,
    NumberHighlightedSections,
    Title,
    KeywordsExistence,
    KeywordFrequency,
    ForbiddenWords,
    LetterFrequency,
    ResponseLanguage,
    NumberWords,
    NumberSentences,
    NumberParagraphs,
    NthParagraphFirstWord,
    NoComma,
    EndChecker,
    Quotation,
}

use Family::*;

impl Family {
    /// Every family, in the order of `quester_ifeval::INSTRUCTION_IDS`.
    pub const ALL: [Family; 25] = [
        EnglishCapital,
        EnglishLowercase,
        CapitalWordFrequency,
        RepeatPrompt,
        TwoResponses,
        NumberPlaceholders,
        Postscript,
        ConstrainedResponse,
        JsonFormat,
        MultipleSections,
        NumberBulletLists,
        NumberHighlightedSections,
        Title,
        KeywordsExistence,
        KeywordFrequency,
        ForbiddenWords,
        LetterFrequency,
        ResponseLanguage,
        NumberWords,
        NumberSentences,
        NumberParagraphs,
        NthParagraphFirstWord,
        NoComma,
        EndChecker,
        Quotation,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// The IFEval id, e.g. `punctuation:no_comma` (the same string `Instruction::id` returns).
    pub fn id(self) -> &'static str {
        INSTRUCTION_IDS[self.index()]
    }

    /// The id without its category, e.g. `no_comma`.
    pub fn short(self) -> &'static str {
        let id = self.id();
        id.split_once(':').map_or(id, |(_, s)| s)
    }

    /// Accepts the full id (`punctuation:no_comma`) or the short name (`no_comma`).
    pub fn parse(name: &str) -> Option<Family> {
        let name = name.trim();
        Family::ALL
            .into_iter()
            .find(|f| f.id() == name || f.short() == name)
    }

    /// Relative weight when families are drawn. Languages other than English are rare: a
    /// 135M-parameter model trained mostly on English text can barely write them, so they would
    /// mostly teach it that reward is out of reach.
    pub fn draw_weight(self) -> f64 {
        match self {
            ResponseLanguage => 0.25,
            _ => 1.0,
        }
    }
}

/// Families a JSON answer can honour: anything about layout, case, punctuation or where the
/// text starts and ends would fight the JSON syntax or be meaningless inside it.
const JSON_COMPATIBLE: [Family; 6] = [
    KeywordsExistence,
    KeywordFrequency,
    ForbiddenWords,
    LetterFrequency,
    NumberWords,
    NumberPlaceholders,
];

/// Pairs never drawn together (JSON is handled by [`JSON_COMPATIBLE`]). The reason is on each
/// line; the same table is in `docs/envs/instruction-following.md`.
const CONFLICTS: &[(Family, Family)] = &[
    // Contradictory case rules.
    (EnglishCapital, EnglishLowercase),
    (EnglishCapital, CapitalWordFrequency),
    (EnglishLowercase, CapitalWordFrequency),
    // The fixed phrases and the section splitter are matched case-sensitively.
    (EnglishCapital, ConstrainedResponse),
    (EnglishLowercase, ConstrainedResponse),
    (EnglishCapital, MultipleSections),
    (EnglishLowercase, MultipleSections),
    // The case checkers also require English; so do fixed English words and phrases.
    (EnglishCapital, ResponseLanguage),
    (EnglishLowercase, ResponseLanguage),
    (ResponseLanguage, RepeatPrompt),
    (ResponseLanguage, EndChecker),
    (ResponseLanguage, ConstrainedResponse),
    (ResponseLanguage, KeywordsExistence),
    (ResponseLanguage, KeywordFrequency),
    (ResponseLanguage, NthParagraphFirstWord),
    (ResponseLanguage, MultipleSections),
    // The response must start with the request: nothing else may come first, and the request
    // is in ordinary case and may contain commas.
    (RepeatPrompt, Quotation),
    (RepeatPrompt, EndChecker),
    (RepeatPrompt, TwoResponses),
    (RepeatPrompt, NthParagraphFirstWord),
    (RepeatPrompt, EnglishCapital),
    (RepeatPrompt, EnglishLowercase),
    (RepeatPrompt, NoComma),
    // `******` between two responses splits into `***` paragraphs too; two answers make
    // counted layouts ambiguous.
    (TwoResponses, NumberParagraphs),
    (TwoResponses, NthParagraphFirstWord),
    (TwoResponses, MultipleSections),
    (TwoResponses, NumberBulletLists),
    (TwoResponses, Quotation),
    // Two paragraph conventions (`***` versus blank lines) or two ways of dividing the text.
    (NumberParagraphs, NthParagraphFirstWord),
    (NumberParagraphs, MultipleSections),
    (NthParagraphFirstWord, MultipleSections),
    // A title line or a postscript separated by a blank line counts as a paragraph.
    (NthParagraphFirstWord, Title),
    (NthParagraphFirstWord, Postscript),
    // Both want the last word.
    (EndChecker, Postscript),
];

/// Whether `a` and `b` are never drawn together.
pub fn conflicts(a: Family, b: Family) -> bool {
    if a == b {
        return true;
    }
    if a == JsonFormat {
        return !JSON_COMPATIBLE.contains(&b);
    }
    if b == JsonFormat {
        return !JSON_COMPATIBLE.contains(&a);
    }
    CONFLICTS
        .iter()
        .any(|&(x, y)| (x == a && y == b) || (x == b && y == a))
}

/// Whether no two families in `set` conflict.
pub fn compatible(set: &[Family]) -> bool {
    set.iter()
        .enumerate()
        .all(|(i, &a)| set[i + 1..].iter().all(|&b| !conflicts(a, b)))
}

/// The conflict table as (id, id) pairs, JSON's expanded, for docs and tests.
pub fn conflict_pairs() -> Vec<(Family, Family)> {
    let mut out = Vec::new();
    for (i, &a) in Family::ALL.iter().enumerate() {
        for &b in &Family::ALL[i + 1..] {
            if conflicts(a, b) {
                out.push((a, b));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_checker_crate() {
        for (f, id) in Family::ALL.iter().zip(INSTRUCTION_IDS) {
            assert_eq!(f.id(), id);
            assert_eq!(Family::parse(id), Some(*f));
            assert_eq!(Family::parse(f.short()), Some(*f));
        }
        assert_eq!(Family::parse("nope"), None);
    }

    #[test]
    fn the_table_is_symmetric_and_every_family_has_a_partner() {
        for a in Family::ALL {
            for b in Family::ALL {
                assert_eq!(conflicts(a, b), conflicts(b, a), "{a:?} {b:?}");
            }
            // Every family can be paired with at least three others.
            let partners = Family::ALL.iter().filter(|&&b| !conflicts(a, b)).count();
            assert!(partners >= 3, "{a:?} has {partners} partners");
        }
    }
}
