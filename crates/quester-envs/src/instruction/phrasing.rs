//! Natural-language renderings of the constraints (several templates per family, chosen by the
//! task's RNG, so the model learns the constraint and not one sentence) and of the whole prompt.
//! All wording is ours; IFEval's prompts are never used.

use super::constraints::{pick, LANGUAGES};
use quester_ifeval::{Instruction, Relation};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

fn quoted(words: &[String]) -> Vec<String> {
    words.iter().map(|w| format!("\"{w}\"")).collect()
}

/// `"a"`, `"a" and "b"`, `"a", "b" and "c"` (or `or`).
fn joined(words: &[String], conj: &str) -> String {
    let q = quoted(words);
    match q.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} {conj} {last}", rest.join(", ")),
    }
}

fn ordinal(n: usize) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        4 => "fourth".into(),
        5 => "fifth".into(),
        n => format!("{n}th"),
    }
}

fn capitalised(word: &str) -> String {
    let mut c = word.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn language_name(code: &str) -> &'static str {
    LANGUAGES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("the requested language", |(_, name)| name)
}

/// One rendering of `instruction`, chosen by `rng`.
pub fn phrase(instruction: &Instruction, rng: &mut ChaCha8Rng) -> String {
    use Instruction::*;
    let options: Vec<String> = match instruction {
        EnglishCapital => vec![
            "Write your whole answer in English using capital letters only.".into(),
            "Your entire response must be in English and in ALL CAPITAL LETTERS.".into(),
            "Use uppercase letters only: the whole answer, in English, in capitals.".into(),
        ],
        EnglishLowercase => vec![
            "Write your whole answer in English using lowercase letters only; not a single capital letter.".into(),
            "Your entire response must be in English and entirely in lowercase.".into(),
            "No capital letters anywhere: answer in English, all in lowercase.".into(),
        ],
        CapitalWordFrequency { frequency: n, relation: Relation::AtLeast } => vec![
            format!("Write at least {} in ALL CAPITALS to stress key points.", plural(*n, "word", "words")),
            format!("Include {n} or more words written entirely in capital letters."),
            format!("Use fully capitalised words (LIKE THIS) at least {n} times."),
        ],
        CapitalWordFrequency { frequency: n, relation: Relation::LessThan } => vec![
            format!("Use fewer than {n} words written entirely in capital letters."),
            format!("Words in all capitals (LIKE THIS) may appear fewer than {n} times."),
            format!("Keep fully capitalised words to fewer than {n}."),
        ],
        RepeatPrompt { prompt_to_repeat: p } => vec![
            format!("Before you answer, repeat the request word for word, exactly as written: \"{p}\" Do not write anything before it, and do not repeat these extra instructions."),
            format!("Start your response by copying the request \"{p}\" exactly, then give your answer. Nothing may come before the copied request."),
            "First restate the request exactly as it is written in the first sentence above (only the request, not these rules), then write your answer.".into(),
        ],
        TwoResponses => vec![
            "Give two different answers, separated by six asterisks: ******.".into(),
            "Write two distinct versions of your answer and put six asterisks (******) between them.".into(),
            "Provide two different responses. Separate them with ****** and nothing else.".into(),
        ],
        NumberPlaceholders { num_placeholders: n } => vec![
            format!("Include at least {} in square brackets, for example [name].", plural(*n, "placeholder", "placeholders")),
            format!("Leave at least {} for the reader to fill in, written in square brackets like [date].", plural(*n, "blank", "blanks")),
            format!("Your answer must contain {n} or more placeholders such as [address]."),
        ],
        Postscript { marker } => vec![
            format!("At the end of your answer, add a postscript starting with \"{marker}\"."),
            format!("Finish with a postscript that begins with {marker}"),
            format!("Add a short note after your main answer, starting with \"{marker}\"."),
        ],
        ConstrainedResponse => vec![
            "Somewhere in your answer, say whether you would recommend it to a friend, using exactly one of these sentences: \"My answer is yes.\", \"My answer is no.\" or \"My answer is maybe.\"".into(),
            "Include one of the exact sentences \"My answer is yes.\", \"My answer is no.\" or \"My answer is maybe.\" to say whether you find your answer convincing.".into(),
            "Close by answering the question \"Was this easy to write?\" with one of: \"My answer is yes.\", \"My answer is no.\", \"My answer is maybe.\"".into(),
        ],
        JsonFormat => vec![
            "Format your entire output as JSON; you may wrap it in a ```json code block.".into(),
            "Return the whole answer as one valid JSON object.".into(),
            "Your response must be valid JSON and nothing else.".into(),
        ],
        MultipleSections { splitter: s, num_sections: n } => vec![
            format!("Divide your answer into {n} sections and mark the start of each with \"{s} X\", where X is the section number."),
            format!("Organise your response in {n} parts labelled {s} 1, {s} 2 and so on."),
            format!("Your answer must have {n} sections; begin each one with {s} followed by its number, like \"{s} 1\"."),
        ],
        NumberBulletLists { num_bullets: n } => vec![
            format!("Use exactly {} in Markdown, each on its own line starting with \"* \".", plural(*n, "bullet point", "bullet points")),
            format!("Your answer must contain exactly {}: lines that start with an asterisk and a space (* like this).", plural(*n, "bullet point", "bullet points")),
            format!("Include a list of exactly {n} Markdown bullet points (lines starting with \"* \") and no other bullet points."),
        ],
        NumberHighlightedSections { num_highlights: n } => vec![
            format!("Highlight at least {} of your answer with Markdown, like *this highlighted part*.", plural(*n, "part", "parts")),
            format!("Mark at least {} as highlighted by wrapping it in single asterisks, for example *key idea*.", plural(*n, "section", "sections")),
            format!("Use Markdown to highlight {n} or more phrases, e.g. *an important phrase*."),
        ],
        Title => vec![
            "Give your answer a title wrapped in double angular brackets, such as <<my title>>.".into(),
            "Start with a title inside double angle brackets, like <<A Good Title>>.".into(),
            "Include a title, written between << and >>.".into(),
        ],
        KeywordsExistence { keywords } => {
            let (noun, list) = (if keywords.len() == 1 { "keyword" } else { "keywords" }, joined(keywords, "and"));
            vec![
                format!("Include the {noun} {list}."),
                format!("Make sure {list} {} in your answer.", if keywords.len() == 1 { "appears" } else { "all appear" }),
                format!("Your response must mention {list}."),
            ]
        }
        KeywordFrequency { keyword: k, frequency: n, relation: Relation::AtLeast } => vec![
            format!("Use the word \"{k}\" at least {n} times."),
            format!("The word \"{k}\" should appear {n} or more times."),
            format!("Mention \"{k}\" at least {n} times."),
        ],
        KeywordFrequency { keyword: k, frequency: n, relation: Relation::LessThan } => vec![
            format!("Use the word \"{k}\" fewer than {n} times."),
            format!("The word \"{k}\" may appear at most {}.", plural(n.saturating_sub(1), "time", "times")),
            format!("Do not use \"{k}\" {n} times or more."),
        ],
        ForbiddenWords { words } => {
            let noun = if words.len() == 1 { "word" } else { "words" };
            vec![
                format!("Do not use the {noun} {}.", joined(words, "or")),
                format!("Avoid the {noun} {} entirely.", joined(words, "and")),
                format!("The following {noun} must not appear: {}.", quoted(words).join(", ")),
            ]
        }
        LetterFrequency { letter: l, frequency: n, relation: Relation::AtLeast } => vec![
            format!("The letter \"{l}\" should appear at least {n} times."),
            format!("Use the letter {l} {n} or more times."),
            format!("Make sure your answer contains the letter \"{l}\" at least {n} times."),
        ],
        LetterFrequency { letter: l, frequency: n, relation: Relation::LessThan } => vec![
            format!("The letter \"{l}\" should appear fewer than {n} times."),
            format!("Use the letter \"{l}\" at most {}.", plural(n.saturating_sub(1), "time", "times")),
            format!("Keep the letter \"{l}\" to fewer than {n} occurrences."),
        ],
        ResponseLanguage { language } => {
            let name = language_name(language);
            vec![
                format!("Write your entire answer in {name}; no other language is allowed."),
                format!("Respond only in {name}."),
                format!("Your whole response must be written in {name}."),
            ]
        }
        NumberWords { num_words: n, relation: Relation::LessThan } => vec![
            format!("Answer in fewer than {n} words."),
            format!("Keep your response under {n} words."),
            format!("Use fewer than {n} words."),
        ],
        NumberWords { num_words: n, relation: Relation::AtLeast } => vec![
            format!("Write at least {n} words."),
            format!("Your answer must be {n} words or longer."),
            format!("Use no fewer than {n} words."),
        ],
        NumberSentences { num_sentences: n, relation: Relation::LessThan } => vec![
            format!("Answer in fewer than {n} sentences."),
            format!("Use at most {}.", plural(n.saturating_sub(1), "sentence", "sentences")),
            format!("Keep it under {n} sentences."),
        ],
        NumberSentences { num_sentences: n, relation: Relation::AtLeast } => vec![
            format!("Write at least {}.", plural(*n, "sentence", "sentences")),
            format!("Your answer must contain {n} or more sentences."),
            format!("Use no fewer than {n} sentences."),
        ],
        NumberParagraphs { num_paragraphs: n } => vec![
            format!("Write exactly {n} paragraphs, separated from each other by the Markdown divider ***."),
            format!("Your response should have {n} paragraphs. Put *** on its own line between paragraphs."),
            format!("Split your answer into {n} paragraphs using *** as the separator."),
        ],
        NthParagraphFirstWord { num_paragraphs: num, nth_paragraph: nth, first_word: w } => {
            let w = capitalised(w);
            vec![
                format!("Write exactly {num} paragraphs separated by blank lines. Paragraph {nth} must start with the word \"{w}\"."),
                format!("There should be {num} paragraphs, separated by an empty line; the {} paragraph must begin with \"{w}\".", ordinal(*nth)),
                format!("Use {num} paragraphs with a blank line between each, and start the {} one with the word {w}.", ordinal(*nth)),
            ]
        }
        NoComma => vec![
            "Do not use any commas in your response.".into(),
            "Avoid commas entirely.".into(),
            "Write without a single comma.".into(),
        ],
        EndChecker { end_phrase: p } => vec![
            format!("End your response with the exact phrase \"{p}\" and write nothing after it."),
            format!("Finish your answer with \"{p}\"; no other words should follow."),
            format!("The last words of your response must be: {p}"),
        ],
        Quotation => vec![
            "Wrap your entire response in double quotation marks.".into(),
            "Put the whole answer inside double quotes.".into(),
            "Enclose your full response in \"double quotation marks\".".into(),
        ],
    };
    let i = rng.random_range(0..options.len());
    options.into_iter().nth(i).unwrap_or_default()
}

const LIST_HEADERS: &[&str] = &[
    "Requirements:",
    "Follow these rules:",
    "Constraints:",
    "Your answer must follow these instructions:",
];

/// The full prompt: the request, then the constraints inline or as a list.
pub fn render(request: &str, phrases: &[String], rng: &mut ChaCha8Rng) -> String {
    match rng.random_range(0..4) {
        0 | 1 => {
            let mut out = request.to_string();
            for p in phrases {
                out.push(' ');
                out.push_str(p);
            }
            out
        }
        style => {
            let header = pick(rng, LIST_HEADERS).unwrap_or("Requirements:");
            let mut out = format!("{request}\n\n{header}");
            for (i, p) in phrases.iter().enumerate() {
                if style == 2 {
                    out.push_str(&format!("\n- {p}"));
                } else {
                    out.push_str(&format!("\n{}. {p}", i + 1));
                }
            }
            out
        }
    }
}
