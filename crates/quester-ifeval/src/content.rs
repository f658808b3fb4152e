//! `detectable_content:*`: square-bracket placeholders and the postscript marker.

use crate::pytext::{self, SPACE_CLASS};
use crate::{recache, static_regex};

/// Counts non-overlapping shortest `[...]` on one line (`[]` and Markdown link text count).
pub(crate) fn number_placeholders(response: &str, num_placeholders: usize) -> bool {
    let count = static_regex!(r"\[.*?\]").map_or(0, |re| re.find_iter(response).count());
    count >= num_placeholders
}

/// The lowercased response must contain the marker anywhere (not only at a line start or at
/// the end). `P.P.S` and `P.S.` allow one optional whitespace character after each period;
/// any other marker is matched literally.
pub(crate) fn postscript(response: &str, marker: &str) -> bool {
    let text = pytext::lower(response);
    let re = match pytext::strip(marker) {
        "P.P.S" => static_regex!(&format!(r"p\.{SPACE_CLASS}?p\.{SPACE_CLASS}?s")).cloned(),
        "P.S." => static_regex!(&format!(r"p\.{SPACE_CLASS}?s\.")).cloned(),
        other => recache::cached(&regex::escape(&pytext::lower(other))),
    };
    re.is_some_and(|re| re.is_match(&text))
}
