//! Drawing the arguments of a set of families: word limits, keywords, letters, phrases. The
//! ranges suit a small model (e.g. 20-200 words, 2-4 paragraphs), and arguments are drawn with
//! the whole set in view so that no two constraints of one task fight each other: a word limit
//! leaves room for the paragraphs asked for, a forbidden word is never one the answer must
//! contain, a "fewer than" count leaves room for the text another constraint imposes.

use super::families::Family;
use super::requests::Request;
use quester_ifeval::{Instruction, Relation};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Words a writer leans on; forbidding them is a fair test of word choice.
pub const FORBIDDEN_POOL: &[&str] = &[
    "very",
    "really",
    "just",
    "thing",
    "things",
    "good",
    "nice",
    "great",
    "amazing",
    "important",
    "actually",
    "basically",
    "stuff",
    "always",
    "never",
    "also",
    "because",
    "however",
    "awesome",
    "perfect",
    "simple",
    "lovely",
    "maybe",
];

/// First words for `nth_paragraph_first_word` (lowercase: the checker lower-cases the answer's
/// word before comparing).
pub const FIRST_WORDS: &[&str] = &[
    "today",
    "first",
    "imagine",
    "remember",
    "meanwhile",
    "finally",
    "sometimes",
    "perhaps",
    "yesterday",
    "together",
    "luckily",
    "next",
    "still",
    "now",
];

/// Keywords used when a request's topic words are used up.
pub const GENERIC_KEYWORDS: &[&str] = &[
    "window", "river", "morning", "light", "journey", "garden", "friend", "music", "question",
    "colour", "silence", "promise",
];

/// End phrases: no commas, so they combine with `no_comma`.
pub const END_PHRASES: &[&str] = &[
    "Is there anything else I can help with?",
    "Let me know if you have any other questions.",
    "Thank you for reading.",
    "That is all for now.",
    "Have a wonderful day!",
    "I hope this helps.",
    "Until next time.",
    "Any other questions?",
];

/// Section splitters (IFEval matches them case-sensitively).
pub const SPLITTERS: &[&str] = &["Section", "SECTION", "Part", "PART", "Chapter"];

/// Postscript markers, spelled as IFEval's checker expects them.
pub const MARKERS: &[&str] = &["P.S.", "P.P.S"];

/// Letters that are common in English: "at least N" of them is reachable in a short answer.
pub const COMMON_LETTERS: &[&str] = &["e", "t", "a", "o", "i", "n", "s", "r", "h", "l"];
/// Letters rare enough that "fewer than N" is a real constraint but not a trap.
pub const RARE_LETTERS: &[&str] = &["z", "q", "x", "j"];

/// Languages besides English (langdetect codes), ones a small model has seen the most of.
pub const LANGUAGES: &[(&str, &str)] = &[("fr", "French"), ("es", "Spanish"), ("de", "German")];

/// The constrained-response sentence with the most letters, used to budget counts.
const LONGEST_CONSTRAINED: &str = "My answer is maybe.";

/// What the arguments drawn so far force into every satisfying answer.
struct Context<'a> {
    request: &'a Request,
    families: &'a [Family],
    /// Texts every satisfying answer contains (the repeated request, end phrase, keywords...).
    required: Vec<String>,
    /// Words given a role already (keywords, first words): no word gets two roles.
    used: Vec<String>,
    /// The most structural units (paragraphs, bullets, sections, sentences) asked for: each
    /// needs a few words and at least a sentence.
    units: usize,
    /// The "fewer than M sentences" limit, once drawn (sentences come before words).
    sentence_limit: Option<usize>,
}

impl Context<'_> {
    fn has(&self, f: Family) -> bool {
        self.families.contains(&f)
    }

    fn required_lower(&self) -> String {
        self.required.join("\n").to_lowercase()
    }

    /// Two answers in one response double every length.
    fn copies(&self) -> usize {
        if self.has(Family::TwoResponses) {
            2
        } else {
            1
        }
    }

    /// Picks a word for a keyword role: a topic word first, else a generic one; never a word
    /// with a role already, and (for "fewer than" counts) long enough not to hide inside other
    /// words by accident, since IFEval counts keywords as substrings.
    fn keyword(&mut self, rng: &mut ChaCha8Rng, min_len: usize) -> String {
        let fresh = |w: &&&str| w.len() >= min_len && !self.used.iter().any(|u| u == **w);
        let topic: Vec<&str> = self.request.topic.iter().filter(fresh).copied().collect();
        let pool: Vec<&str> = if topic.is_empty() {
            GENERIC_KEYWORDS.iter().filter(fresh).copied().collect()
        } else {
            topic
        };
        let word = pick(rng, &pool).unwrap_or("promise").to_string();
        self.used.push(word.clone());
        word
    }
}

/// A uniform pick; `None` only for an empty slice.
pub fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> Option<T> {
    if items.is_empty() {
        None
    } else {
        Some(items[rng.random_range(0..items.len())])
    }
}

fn relation(rng: &mut ChaCha8Rng) -> Relation {
    if rng.random_bool(0.5) {
        Relation::LessThan
    } else {
        Relation::AtLeast
    }
}

/// When a family's arguments are drawn: producers of required text first, then the
/// constraints that must leave room for it, lengths last.
fn stage(f: Family) -> u8 {
    use Family::*;
    match f {
        RepeatPrompt
        | EndChecker
        | ConstrainedResponse
        | Postscript
        | MultipleSections
        | NthParagraphFirstWord => 0,
        ForbiddenWords | LetterFrequency | CapitalWordFrequency => 2,
        NumberSentences => 3,
        NumberWords => 4,
        _ => 1,
    }
}

/// Draws the arguments of `families` for `request`; the result is in the order of `families`.
pub fn draw_arguments(
    families: &[Family],
    request: &Request,
    rng: &mut ChaCha8Rng,
) -> Vec<Instruction> {
    let mut order: Vec<usize> = (0..families.len()).collect();
    order.sort_by_key(|&i| (stage(families[i]), families[i]));
    let mut ctx = Context {
        request,
        families,
        required: Vec::new(),
        used: Vec::new(),
        units: 0,
        sentence_limit: None,
    };
    let mut out: Vec<Option<Instruction>> = vec![None; families.len()];
    for i in order {
        out[i] = Some(draw_one(families[i], &mut ctx, rng));
    }
    out.into_iter().flatten().collect()
}

fn draw_one(family: Family, ctx: &mut Context, rng: &mut ChaCha8Rng) -> Instruction {
    use Family as F;
    match family {
        F::EnglishCapital => Instruction::EnglishCapital,
        F::EnglishLowercase => Instruction::EnglishLowercase,
        F::TwoResponses => Instruction::TwoResponses,
        F::JsonFormat => Instruction::JsonFormat,
        F::Title => Instruction::Title,
        F::NoComma => Instruction::NoComma,
        F::Quotation => Instruction::Quotation,
        F::ConstrainedResponse => {
            ctx.required.push(LONGEST_CONSTRAINED.into());
            Instruction::ConstrainedResponse
        }
        F::RepeatPrompt => {
            ctx.required.push(ctx.request.text.into());
            Instruction::RepeatPrompt {
                prompt_to_repeat: ctx.request.text.into(),
            }
        }
        F::EndChecker => {
            let phrase = pick(rng, END_PHRASES).unwrap_or("Thank you for reading.");
            ctx.required.push(phrase.into());
            Instruction::EndChecker {
                end_phrase: phrase.into(),
            }
        }
        F::Postscript => {
            let marker = pick(rng, MARKERS).unwrap_or("P.S.");
            ctx.required.push(marker.into());
            Instruction::Postscript {
                marker: marker.into(),
            }
        }
        F::MultipleSections => {
            let splitter = pick(rng, SPLITTERS).unwrap_or("Section");
            let n = rng.random_range(2..=4);
            ctx.required
                .extend((1..=n).map(|i| format!("{splitter} {i}")));
            ctx.units = ctx.units.max(n);
            Instruction::MultipleSections {
                splitter: splitter.into(),
                num_sections: n,
            }
        }
        F::NthParagraphFirstWord => {
            let num = rng.random_range(2..=4);
            let nth = rng.random_range(1..=num);
            let fresh: Vec<&str> = FIRST_WORDS
                .iter()
                .filter(|w| !ctx.request.topic.contains(w))
                .copied()
                .collect();
            let word = pick(rng, &fresh).unwrap_or("today");
            ctx.used.push(word.into());
            ctx.required.push(word.into());
            ctx.units = ctx.units.max(num);
            Instruction::NthParagraphFirstWord {
                num_paragraphs: num,
                nth_paragraph: nth,
                first_word: word.into(),
            }
        }
        F::KeywordsExistence => {
            let n = rng.random_range(1..=3);
            let keywords: Vec<String> = (0..n).map(|_| ctx.keyword(rng, 3)).collect();
            ctx.required.extend(keywords.iter().cloned());
            Instruction::KeywordsExistence { keywords }
        }
        F::KeywordFrequency => {
            let rel = relation(rng);
            match rel {
                Relation::AtLeast => {
                    let keyword = ctx.keyword(rng, 3);
                    let n = rng.random_range(2..=4);
                    ctx.required.extend((0..n).map(|_| keyword.clone()));
                    Instruction::KeywordFrequency {
                        keyword,
                        frequency: n,
                        relation: rel,
                    }
                }
                Relation::LessThan => {
                    let keyword = ctx.keyword(rng, 5);
                    let forced = ctx.required_lower().matches(keyword.as_str()).count();
                    let n = rng.random_range(2..=3).max(forced + 2);
                    Instruction::KeywordFrequency {
                        keyword,
                        frequency: n,
                        relation: rel,
                    }
                }
            }
        }
        F::NumberParagraphs => {
            let n = rng.random_range(2..=4);
            ctx.units = ctx.units.max(n);
            Instruction::NumberParagraphs { num_paragraphs: n }
        }
        F::NumberBulletLists => {
            let n = rng.random_range(2..=5);
            ctx.units = ctx.units.max(n);
            Instruction::NumberBulletLists { num_bullets: n }
        }
        F::NumberHighlightedSections => Instruction::NumberHighlightedSections {
            num_highlights: rng.random_range(1..=3),
        },
        F::NumberPlaceholders => Instruction::NumberPlaceholders {
            num_placeholders: rng.random_range(1..=3),
        },
        F::ResponseLanguage => Instruction::ResponseLanguage {
            language: pick(rng, LANGUAGES).map_or("fr", |(code, _)| code).into(),
        },
        F::ForbiddenWords => {
            let required = ctx.required_lower();
            let allowed: Vec<&str> = FORBIDDEN_POOL
                .iter()
                .filter(|w| !contains_word(&required, w) && !ctx.used.iter().any(|u| u == **w))
                .copied()
                .collect();
            let n = rng.random_range(1..=3).min(allowed.len().max(1));
            let mut words: Vec<String> = Vec::new();
            let mut left = allowed;
            for _ in 0..n {
                if left.is_empty() {
                    break;
                }
                let w = left.remove(rng.random_range(0..left.len()));
                words.push(w.into());
            }
            if words.is_empty() {
                // Unreachable with the pools above (the required texts are short); a word no
                // answer needs keeps the constraint well-formed anyway.
                words.push("basically".into());
            }
            Instruction::ForbiddenWords { words }
        }
        F::LetterFrequency => {
            let rel = relation(rng);
            match rel {
                Relation::AtLeast => Instruction::LetterFrequency {
                    letter: pick(rng, COMMON_LETTERS).unwrap_or("e").into(),
                    frequency: rng.random_range(5..=15),
                    relation: rel,
                },
                Relation::LessThan => {
                    let letter = pick(rng, RARE_LETTERS).unwrap_or("z");
                    let forced = ctx.required_lower().matches(letter).count();
                    Instruction::LetterFrequency {
                        letter: letter.into(),
                        frequency: rng.random_range(2..=5) + forced,
                        relation: rel,
                    }
                }
            }
        }
        F::CapitalWordFrequency => {
            let rel = relation(rng);
            let frequency = match rel {
                Relation::AtLeast => rng.random_range(2..=5),
                Relation::LessThan => {
                    rng.random_range(3..=6) + capital_words(&ctx.required.join(" "))
                }
            };
            Instruction::CapitalWordFrequency {
                frequency,
                relation: rel,
            }
        }
        F::NumberSentences => {
            let rel = relation(rng);
            let n = match rel {
                Relation::AtLeast => {
                    let n = rng.random_range(2..=8);
                    ctx.units = ctx.units.max(n);
                    n
                }
                Relation::LessThan => {
                    // Room for one sentence per unit, for the imposed sentences, and a spare.
                    let forced = sentence_marks(&ctx.required.join(" "));
                    let floor = ctx.units * ctx.copies() + forced + 2;
                    let n = rng.random_range(3..=10).max(floor);
                    ctx.sentence_limit = Some(n);
                    n
                }
            };
            Instruction::NumberSentences {
                num_sentences: n,
                relation: rel,
            }
        }
        F::NumberWords => {
            let rel = relation(rng);
            let n = match rel {
                Relation::AtLeast => {
                    let n = 10 * rng.random_range(2..=15);
                    // Fewer than M sentences hold about 15 words each.
                    match ctx.sentence_limit {
                        Some(cap) => n.min(round_down_10(15 * cap.saturating_sub(1))).max(20),
                        None => n,
                    }
                }
                Relation::LessThan => {
                    let forced: usize = ctx
                        .required
                        .iter()
                        .map(|t| t.split_whitespace().count())
                        .sum();
                    let floor = (20 + 12 * ctx.units) * ctx.copies() + forced;
                    (10 * rng.random_range(4..=20)).max(round_up_10(floor))
                }
            };
            Instruction::NumberWords {
                num_words: n,
                relation: rel,
            }
        }
    }
}

fn round_up_10(n: usize) -> usize {
    n.div_ceil(10) * 10
}

fn round_down_10(n: usize) -> usize {
    n / 10 * 10
}

/// Whether `word` occurs in `text` as a whole word (ASCII word characters).
pub fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !is_word(before) && !is_word(after)
    })
}

/// Words written in capitals in `text` (`P.S.`, `SECTION`, `I`), roughly as IFEval's
/// tokenizer and `isupper` see them.
fn capital_words(text: &str) -> usize {
    text.split(|c: char| c.is_whitespace() || c == '[' || c == ']')
        .filter(|w| {
            w.chars().any(char::is_alphabetic)
                && w.chars()
                    .filter(|c| c.is_alphabetic())
                    .all(char::is_uppercase)
        })
        .count()
}

/// Sentence-ending marks in `text`: each imposed sentence costs one of the sentence budget.
fn sentence_marks(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| w.ends_with(['.', '?', '!']))
        .count()
}
