//! Text made safe for HTML pages, and the one-pass template filling of single-file pages.

use std::collections::HashMap;

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON made safe inside `<script type="application/json">`: `<` only occurs inside JSON strings,
/// where `\u003c` means the same, so no `</script>` or `<!--` can end the element early.
pub fn script_json(json: &str) -> String {
    json.replace('<', "\\u003c")
}

/// Replaces every `{{NAME}}` of `template` in one pass (inserted text is never scanned again);
/// unknown names are kept as they are.
pub fn fill(template: &str, values: &HashMap<&str, String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) if values.contains_key(&after[..end]) => {
                out.push_str(&values[&after[..end]]);
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}
