//! `detectable_format:*`: fixed answers, JSON, sections, bullets, highlights and titles.

use crate::pytext::{self, SPACE_CLASS};
use crate::{pyjson, recache, static_regex};

const CONSTRAINED_OPTIONS: [&str; 3] = [
    "My answer is yes.",
    "My answer is no.",
    "My answer is maybe.",
];

/// One of the three fixed phrases must occur, case-sensitively; other text may surround it.
pub(crate) fn constrained_response(response: &str) -> bool {
    let text = pytext::strip(response);
    CONSTRAINED_OPTIONS
        .iter()
        .any(|option| text.contains(option))
}

/// Strip; drop the fence prefixes "```json", "```Json", "```JSON", "```" (each only if
/// present, one after the other) and one trailing "```"; strip again; then the rest must be
/// accepted by Python's `json.loads`.
pub(crate) fn json_format(response: &str) -> bool {
    let mut text = pytext::strip(response);
    for fence in ["```json", "```Json", "```JSON", "```"] {
        text = text.strip_prefix(fence).unwrap_or(text);
    }
    text = text.strip_suffix("```").unwrap_or(text);
    pyjson::is_valid(pytext::strip(text))
}

/// Counts splits on: optional whitespace char, the splitter word (case-sensitive, no word
/// boundary), optional whitespace char, digits, optional whitespace char. Sections = pieces
/// minus one, and at least `num_sections` are needed.
pub(crate) fn multiple_sections(response: &str, splitter: &str, num_sections: usize) -> bool {
    let pattern = format!(
        r"{SPACE_CLASS}?{}{SPACE_CLASS}?\d+{SPACE_CLASS}?",
        regex::escape(pytext::strip(splitter))
    );
    let count = recache::cached(&pattern).map_or(0, |re| re.find_iter(response).count());
    count >= num_sections
}

/// Lines starting (after optional whitespace) with `*` and a non-`*` character, plus lines
/// starting with `-`; the total must EQUAL `num_bullets`. The leading whitespace may span
/// blank lines and the non-`*` character may be a newline, exactly as the reference's regexes
/// behave.
pub(crate) fn number_bullet_lists(response: &str, num_bullets: usize) -> bool {
    let star = static_regex!(&format!(r"(?m)^{SPACE_CLASS}*\*[^*].*$"));
    let dash = static_regex!(&format!(r"(?m)^{SPACE_CLASS}*-.*$"));
    let count = |re: Option<&regex::Regex>| re.map_or(0, |re| re.find_iter(response).count());
    count(star) + count(dash) == num_bullets
}

/// `*text*` and `**text**` spans on one line with non-blank text; at least `num_highlights`.
pub(crate) fn number_highlighted_sections(response: &str, num_highlights: usize) -> bool {
    let non_blank = |inner: &str| !pytext::strip(inner).is_empty();
    let single = static_regex!(r"\*[^\n*]*\*").map_or(0, |re| {
        re.find_iter(response)
            .filter(|m| non_blank(&m.as_str()[1..m.len() - 1]))
            .count()
    });
    let double = static_regex!(r"\*\*[^\n*]*\*\*").map_or(0, |re| {
        re.find_iter(response)
            .filter(|m| non_blank(&m.as_str()[2..m.len() - 2]))
            .count()
    });
    single + double >= num_highlights
}

/// `<<...>>` on one line (greedy: first `<<` to last `>>`) whose text, without the brackets
/// and whitespace, is non-empty.
pub(crate) fn title(response: &str) -> bool {
    static_regex!(r"<<[^\n]+>>").is_some_and(|re| {
        re.find_iter(response).any(|m| {
            let inner = m.as_str().trim_start_matches('<').trim_end_matches('>');
            !pytext::strip(inner).is_empty()
        })
    })
}
