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
    // The last complete pair opens with the last opening tag that ends before the last closing
    // tag (a later one is never closed), and closes at the first closing tag after it. Two
    // scans, so thousands of unclosed tags stay linear. No opening tag can lie between the two:
    // it would be a later one that ends before the last closing tag, so the pair is innermost.
    let last_close = lower.rfind(&close)?;
    let start = lower[..last_close].rfind(&open)?;
    let body_start = start + open.len();
    let rel = lower[body_start..].find(&close)?;
    Some(response[body_start..body_start + rel].trim())
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
    fn many_unclosed_tags_stay_fast() {
        // Quadratic before: every unclosed tag rescanned the rest of the text.
        let hostile = "<action>".repeat(200_000);
        let t = std::time::Instant::now();
        assert_eq!(extract_action(&hostile), None);
        let text = format!("<action>up</action>{hostile}");
        assert_eq!(extract_action(&text), Some("up"));
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    }

    #[test]
    fn row_col() {
        assert_eq!(parse_row_col("(3, 4)"), Some((3, 4)));
        assert_eq!(parse_row_col("3 4"), Some((3, 4)));
        assert_eq!(parse_row_col("(3)"), None);
        assert_eq!(parse_row_col("1,2,3"), None);
        assert_eq!(parse_row_col("99999999999999999999999, 1"), None);
    }

    /// The earlier, quadratic scan: the last opening tag that a closing tag follows.
    fn extract_reference<'a>(response: &'a str, tag: &str) -> Option<&'a str> {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        let lower = response.to_ascii_lowercase();
        let mut end = lower.len();
        loop {
            let start = lower[..end].rfind(&open)?;
            let body = start + open.len();
            if let Some(rel) = lower[body..].find(&close) {
                return Some(response[body..body + rel].trim());
            }
            end = start;
        }
    }

    proptest::proptest! {
        #[test]
        fn same_answer_as_the_quadratic_scan(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["<action>", "</action>", "<ACTION>", "x", " ", "é", "<", ">"]),
                0..40,
            )
        ) {
            let s = parts.concat();
            proptest::prop_assert_eq!(extract_action(&s), extract_reference(&s, "action"));
        }

        #[test]
        fn never_panics(s in ".*") {
            let _ = extract_action(&s);
            let _ = parse_row_col(&s);
        }
    }
}
