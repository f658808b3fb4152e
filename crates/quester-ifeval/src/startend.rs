//! `startend:*`: the end phrase, and wrapping in double quotes.

use crate::pytext;

/// Strip whitespace, then every leading and trailing ASCII `"`, lowercase; the result must end
/// with the stripped, lowercased phrase. Whitespace inside a closing quote or trailing
/// Markdown therefore fails.
pub(crate) fn end_checker(response: &str, end_phrase: &str) -> bool {
    let text = pytext::lower(pytext::strip(response).trim_matches('"'));
    text.ends_with(&pytext::lower(pytext::strip(end_phrase)))
}

/// After stripping, at least two characters, the first and the last ASCII `"`.
pub(crate) fn quotation(response: &str) -> bool {
    let text = pytext::strip(response);
    text.chars().count() > 1 && text.starts_with('"') && text.ends_with('"')
}
