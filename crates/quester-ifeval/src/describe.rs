//! Rubric sentences for each instruction, in our own words. They are meant for numbered
//! "Satisfied / Unmet" lists, so each is one sentence that states the arguments explicitly.

use crate::{Instruction, Relation};

/// `"1 word"`, `"3 words"`.
fn count_of(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// "fewer than 3 words" / "at least 3 words".
fn bound(relation: Relation, n: usize, noun: &str) -> String {
    match relation {
        Relation::LessThan => format!("fewer than {}", count_of(n, noun)),
        Relation::AtLeast => format!("at least {}", count_of(n, noun)),
    }
}

/// "fewer than 3 times" / "at least 3 times".
fn times(relation: Relation, n: usize) -> String {
    bound(relation, n, "time")
}

fn quoted(s: &str) -> String {
    format!("'{s}'")
}

/// "'a'", "'a' and 'b'", "'a', 'b' and 'c'" (with `or` for alternatives).
fn list(items: &[String], conj: &str) -> String {
    let q: Vec<String> = items.iter().map(|s| quoted(s)).collect();
    match q.len() {
        0 => "(none)".to_string(),
        1 => q[0].clone(),
        n => format!("{} {conj} {}", q[..n - 1].join(", "), q[n - 1]),
    }
}

/// English names of the codes langdetect can return.
pub(crate) fn language_name(code: &str) -> Option<&'static str> {
    Some(match code {
        "af" => "Afrikaans",
        "ar" => "Arabic",
        "bg" => "Bulgarian",
        "bn" => "Bengali",
        "ca" => "Catalan",
        "cs" => "Czech",
        "cy" => "Welsh",
        "da" => "Danish",
        "de" => "German",
        "el" => "Greek",
        "en" => "English",
        "es" => "Spanish",
        "et" => "Estonian",
        "fa" => "Persian",
        "fi" => "Finnish",
        "fr" => "French",
        "gu" => "Gujarati",
        "he" => "Hebrew",
        "hi" => "Hindi",
        "hr" => "Croatian",
        "hu" => "Hungarian",
        "id" => "Indonesian",
        "it" => "Italian",
        "ja" => "Japanese",
        "kn" => "Kannada",
        "ko" => "Korean",
        "lt" => "Lithuanian",
        "lv" => "Latvian",
        "mk" => "Macedonian",
        "ml" => "Malayalam",
        "mr" => "Marathi",
        "ne" => "Nepali",
        "nl" => "Dutch",
        "no" => "Norwegian",
        "pa" => "Punjabi",
        "pl" => "Polish",
        "pt" => "Portuguese",
        "ro" => "Romanian",
        "ru" => "Russian",
        "sk" => "Slovak",
        "sl" => "Slovenian",
        "so" => "Somali",
        "sq" => "Albanian",
        "sv" => "Swedish",
        "sw" => "Swahili",
        "ta" => "Tamil",
        "te" => "Telugu",
        "th" => "Thai",
        "tl" => "Tagalog",
        "tr" => "Turkish",
        "uk" => "Ukrainian",
        "ur" => "Urdu",
        "vi" => "Vietnamese",
        "zh-cn" => "Simplified Chinese",
        "zh-tw" => "Traditional Chinese",
        _ => return None,
    })
}

pub(crate) fn describe(instruction: &Instruction) -> String {
    use Instruction::*;
    match instruction {
        EnglishCapital => "Write the entire response in English, in capital letters only.".into(),
        EnglishLowercase => {
            "Write the entire response in English, in lowercase letters only, with no capital letters."
                .into()
        }
        CapitalWordFrequency { frequency, relation } => format!(
            "Use words written entirely in capital letters {}.",
            times(*relation, *frequency)
        ),
        RepeatPrompt { prompt_to_repeat } => format!(
            "Begin by repeating the request word for word, with nothing before it: {}, and only then answer.",
            quoted(prompt_to_repeat.trim())
        ),
        TwoResponses => {
            "Give two different responses, separated only by six asterisks (******).".into()
        }
        NumberPlaceholders { num_placeholders } => format!(
            "Include at least {} in square brackets, such as [address].",
            count_of(*num_placeholders, "placeholder")
        ),
        Postscript { marker } => format!(
            "End with a postscript that starts with {}.",
            quoted(marker.trim())
        ),
        ConstrainedResponse => "Answer with exactly one of 'My answer is yes.', 'My answer is no.' or 'My answer is maybe.'.".into(),
        JsonFormat => {
            "Wrap the entire output in JSON (a Markdown code fence around it is allowed).".into()
        }
        MultipleSections { splitter, num_sections } => format!(
            "Divide the response into at least {}, each starting with '{} X' where X is its number.",
            count_of(*num_sections, "section"),
            splitter.trim()
        ),
        NumberBulletLists { num_bullets } => format!(
            "Use exactly {} as Markdown bullets ('* ' at the start of a line).",
            count_of(*num_bullets, "bullet point")
        ),
        NumberHighlightedSections { num_highlights } => format!(
            "Highlight at least {} with Markdown, like *highlighted section*.",
            count_of(*num_highlights, "section")
        ),
        Title => "Include a title wrapped in double angular brackets, like <<title>>.".into(),
        KeywordsExistence { keywords } => {
            let noun = if keywords.len() == 1 { "keyword" } else { "keywords" };
            format!("Include the {noun} {}.", list(keywords, "and"))
        }
        KeywordFrequency { keyword, frequency, relation } => format!(
            "Use the word {} {}.",
            quoted(keyword.trim()),
            times(*relation, *frequency)
        ),
        ForbiddenWords { words } => {
            let noun = if words.len() == 1 { "word" } else { "words" };
            format!("Do not use the {noun} {}.", list(words, "or"))
        }
        LetterFrequency { letter, frequency, relation } => format!(
            "Use the letter {} {}.",
            quoted(letter.trim()),
            times(*relation, *frequency)
        ),
        ResponseLanguage { language } => match language_name(language) {
            Some(name) => format!("Write the entire response in {name} ({language}), using no other language."),
            None => format!("Write the entire response in the language with code '{language}', using no other language."),
        },
        NumberWords { num_words, relation } => {
            format!("Answer with {}.", bound(*relation, *num_words, "word"))
        }
        NumberSentences { num_sentences, relation } => {
            format!("Answer with {}.", bound(*relation, *num_sentences, "sentence"))
        }
        NumberParagraphs { num_paragraphs } => format!(
            "Write exactly {}, separated by the Markdown divider ***.",
            count_of(*num_paragraphs, "paragraph")
        ),
        NthParagraphFirstWord { num_paragraphs, nth_paragraph, first_word } => format!(
            "Write exactly {} separated by blank lines, with paragraph {nth_paragraph} starting with the word {}.",
            count_of(*num_paragraphs, "paragraph"),
            quoted(first_word)
        ),
        NoComma => "Do not use any commas.".into(),
        EndChecker { end_phrase } => format!(
            "End the response with the exact phrase {}, with nothing after it.",
            quoted(end_phrase.trim())
        ),
        Quotation => "Wrap the entire response in double quotation marks.".into(),
    }
}
