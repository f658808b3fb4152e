//! `combination:*`: repeating the prompt first, and two responses split by `******`.

use crate::pytext;

/// The stripped, lowercased response must start with the stripped, lowercased prompt: an exact
/// character prefix, so quotes, whitespace and punctuation have to match too.
pub(crate) fn repeat_prompt(response: &str, prompt_to_repeat: &str) -> bool {
    let response = pytext::lower(pytext::strip(response));
    let prompt = pytext::lower(pytext::strip(prompt_to_repeat));
    response.starts_with(&prompt)
}

/// Splits on every literal `******`. A blank piece may only be the first or the last one (a
/// blank piece in the middle, e.g. from twelve asterisks, fails at once); exactly two non-blank
/// pieces must remain and differ after stripping.
pub(crate) fn two_responses(response: &str) -> bool {
    let pieces: Vec<&str> = response.split("******").collect();
    let last = pieces.len() - 1;
    let mut kept = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        if pytext::strip(piece).is_empty() {
            if i != 0 && i != last {
                return false;
            }
        } else {
            kept.push(pytext::strip(piece));
        }
    }
    kept.len() == 2 && kept[0] != kept[1]
}
