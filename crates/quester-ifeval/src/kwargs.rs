//! Building an [`Instruction`] from an IFEval id and its `kwargs` object.
//!
//! Null values count as absent because lm-evaluation-harness's copy of the data stores every
//! possible key on every entry, mostly as null. Unknown keys are ignored for the same reason.
//! Unlike the reference (which draws a random argument when one is missing), a missing
//! argument is an error: a checker with a random argument would not be reproducible.

use serde_json::{Map, Value};

use crate::{IfevalError, Instruction, Relation, INSTRUCTION_IDS};

type Kwargs = Map<String, Value>;

/// Reads the arguments of one instruction id from its kwargs.
struct Args<'a> {
    id: &'static str,
    kwargs: &'a Kwargs,
}

impl Args<'_> {
    fn get(&self, key: &'static str) -> Result<&Value, IfevalError> {
        match self.kwargs.get(key) {
            None | Some(Value::Null) => Err(IfevalError::MissingArgument { id: self.id, key }),
            Some(v) => Ok(v),
        }
    }

    fn bad(&self, key: &'static str, problem: impl Into<String>) -> IfevalError {
        IfevalError::BadArgument {
            id: self.id,
            key,
            problem: problem.into(),
        }
    }

    fn string(&self, key: &'static str) -> Result<String, IfevalError> {
        match self.get(key)? {
            Value::String(s) => Ok(s.clone()),
            other => Err(self.bad(key, format!("must be a string, got {other}"))),
        }
    }

    /// A non-negative integer; an integral float such as `3.0` is accepted too (Python would
    /// compare with it just the same).
    fn count(&self, key: &'static str) -> Result<usize, IfevalError> {
        let v = self.get(key)?;
        if let Some(n) = v.as_u64() {
            return usize::try_from(n).map_err(|_| self.bad(key, "is too large"));
        }
        match v.as_f64() {
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 1e15 => Ok(f as usize),
            _ => Err(self.bad(key, format!("must be a non-negative integer, got {v}"))),
        }
    }

    fn relation(&self, key: &'static str) -> Result<Relation, IfevalError> {
        match self.get(key)? {
            Value::String(s) if s == "less than" => Ok(Relation::LessThan),
            Value::String(s) if s == "at least" => Ok(Relation::AtLeast),
            other => Err(self.bad(
                key,
                format!("must be \"less than\" or \"at least\", got {other}"),
            )),
        }
    }

    fn strings(&self, key: &'static str) -> Result<Vec<String>, IfevalError> {
        match self.get(key)? {
            Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => {
                        Err(self.bad(key, format!("must be a list of strings, found {other}")))
                    }
                })
                .collect(),
            other => Err(self.bad(key, format!("must be a list of strings, got {other}"))),
        }
    }
}

pub(crate) fn build(id: &str, kwargs: &Kwargs) -> Result<Instruction, IfevalError> {
    let Some(&id) = INSTRUCTION_IDS.iter().find(|&&known| known == id) else {
        return Err(IfevalError::UnknownId { id: id.to_string() });
    };
    let a = Args { id, kwargs };
    use Instruction::*;
    Ok(match id {
        "change_case:english_capital" => EnglishCapital,
        "change_case:english_lowercase" => EnglishLowercase,
        "change_case:capital_word_frequency" => CapitalWordFrequency {
            frequency: a.count("capital_frequency")?,
            relation: a.relation("capital_relation")?,
        },
        "combination:repeat_prompt" => RepeatPrompt {
            prompt_to_repeat: a.string("prompt_to_repeat")?,
        },
        "combination:two_responses" => TwoResponses,
        "detectable_content:number_placeholders" => NumberPlaceholders {
            num_placeholders: a.count("num_placeholders")?,
        },
        "detectable_content:postscript" => Postscript {
            marker: a.string("postscript_marker")?,
        },
        "detectable_format:constrained_response" => ConstrainedResponse,
        "detectable_format:json_format" => JsonFormat,
        "detectable_format:multiple_sections" => MultipleSections {
            splitter: a.string("section_spliter")?,
            num_sections: a.count("num_sections")?,
        },
        "detectable_format:number_bullet_lists" => NumberBulletLists {
            num_bullets: a.count("num_bullets")?,
        },
        "detectable_format:number_highlighted_sections" => NumberHighlightedSections {
            num_highlights: a.count("num_highlights")?,
        },
        "detectable_format:title" => Title,
        "keywords:existence" => KeywordsExistence {
            keywords: a.strings("keywords")?,
        },
        "keywords:frequency" => KeywordFrequency {
            keyword: a.string("keyword")?,
            frequency: a.count("frequency")?,
            relation: a.relation("relation")?,
        },
        "keywords:forbidden_words" => {
            // The reference deduplicates the list (order is irrelevant for the check); keep the
            // first occurrence of each so `describe` lists them in the prompt's order.
            let mut words: Vec<String> = Vec::new();
            for w in a.strings("forbidden_words")? {
                if !words.contains(&w) {
                    words.push(w);
                }
            }
            ForbiddenWords { words }
        }
        "keywords:letter_frequency" => {
            let letter = a.string("letter")?;
            if letter.chars().count() != 1 {
                return Err(a.bad(
                    "letter",
                    format!("must be a single character, got {letter:?}"),
                ));
            }
            LetterFrequency {
                letter,
                frequency: a.count("let_frequency")?,
                relation: a.relation("let_relation")?,
            }
        }
        "language:response_language" => ResponseLanguage {
            language: a.string("language")?,
        },
        "length_constraints:number_words" => NumberWords {
            num_words: a.count("num_words")?,
            relation: a.relation("relation")?,
        },
        "length_constraints:number_sentences" => NumberSentences {
            num_sentences: a.count("num_sentences")?,
            relation: a.relation("relation")?,
        },
        "length_constraints:number_paragraphs" => NumberParagraphs {
            num_paragraphs: a.count("num_paragraphs")?,
        },
        "length_constraints:nth_paragraph_first_word" => {
            let num_paragraphs = a.count("num_paragraphs")?;
            let nth_paragraph = a.count("nth_paragraph")?;
            // The reference replaces such an n by a random one; refuse it instead.
            if nth_paragraph == 0 || nth_paragraph > num_paragraphs {
                return Err(a.bad(
                    "nth_paragraph",
                    format!("must be between 1 and num_paragraphs ({num_paragraphs}), got {nth_paragraph}"),
                ));
            }
            NthParagraphFirstWord {
                num_paragraphs,
                nth_paragraph,
                first_word: a.string("first_word")?,
            }
        }
        "punctuation:no_comma" => NoComma,
        "startend:end_checker" => EndChecker {
            end_phrase: a.string("end_phrase")?,
        },
        "startend:quotation" => Quotation,
        // Every id of INSTRUCTION_IDS is matched above; this arm is unreachable but keeps the
        // function total without a panic.
        other => {
            return Err(IfevalError::UnknownId {
                id: other.to_string(),
            })
        }
    })
}
