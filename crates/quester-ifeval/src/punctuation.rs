//! `punctuation:no_comma`.

/// Fails on any ASCII comma; fullwidth, ideographic and Arabic commas are not commas here.
pub(crate) fn no_comma(response: &str) -> bool {
    !response.contains(',')
}
