//! Parsing actions out of model responses. One place for every environment.

/// Returns the text inside the LAST complete `<action>...</action>` pair, trimmed.
/// Tags are matched case-insensitively. `None` when there is no complete pair.
pub fn extract_action(response: &str) -> Option<&str> {
    extract_tag(response, "action")
}

/// Returns the text inside the last complete `<tag>...</tag>` pair (case-insensitive tag name),
/// trimmed. Works on arbitrary UTF-8 without panicking.
pub fn extract_tag<'a>(response: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{}>", tag.to_ascii_lowercase());
    let close = format!("</{}>", tag.to_ascii_lowercase());
    // ASCII lower-casing keeps byte offsets identical, so indices map back to `response`.
    let lower = response.to_ascii_lowercase();
    let mut search_end = lower.len();
    loop {
        let start = lower[..search_end].rfind(&open)?;
        let body_start = start + open.len();
        if let Some(rel) = lower[body_start..].find(&close) {
            let body = &response[body_start..body_start + rel];
            // A nested opening tag means this pair is broken; use the innermost complete one.
            if let Some(inner) = body.to_ascii_lowercase().rfind(&open) {
                let inner_start = body_start + inner + open.len();
                return Some(response[inner_start..body_start + rel].trim());
            }
            return Some(body.trim());
        }
        if start == 0 {
            return None;
        }
        search_end = start;
    }
}

/// Parses `(row, col)` / `row, col` / `row col` into two 1-indexed integers.
pub fn parse_row_col(text: &str) -> Option<(usize, usize)> {
    let nums: Vec<&str> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .collect();
    if nums.len() != 2 {
        return None;
    }
    let r = nums[0].parse().ok()?;
    let c = nums[1].parse().ok()?;
    Some((r, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_tag_wins() {
        assert_eq!(
            extract_action("<action>up</action> then <action>left</action>"),
            Some("left")
        );
    }

    #[test]
    fn unclosed_last_tag_falls_back_to_previous_complete_pair() {
        assert_eq!(extract_action("<action>up</action> <action>le"), Some("up"));
        assert_eq!(extract_action("<action>up"), None);
        assert_eq!(extract_action("no tags"), None);
    }

    #[test]
    fn case_insensitive_and_trimmed() {
        assert_eq!(extract_action("<ACTION> Down </Action>"), Some("Down"));
    }

    #[test]
    fn unicode_does_not_break_offsets() {
        assert_eq!(extract_action("√√ <action>√ up</action> é"), Some("√ up"));
    }

    #[test]
    fn nested_open_uses_innermost() {
        assert_eq!(extract_action("<action>a <action>b</action>"), Some("b"));
    }

    #[test]
    fn row_col() {
        assert_eq!(parse_row_col("(3, 4)"), Some((3, 4)));
        assert_eq!(parse_row_col("3 4"), Some((3, 4)));
        assert_eq!(parse_row_col("(3)"), None);
        assert_eq!(parse_row_col("1,2,3"), None);
        assert_eq!(parse_row_col("99999999999999999999999, 1"), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".*") {
            let _ = extract_action(&s);
            let _ = parse_row_col(&s);
        }
    }
}
