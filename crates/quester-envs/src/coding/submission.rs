//! Getting the submitted code out of a response.

use crate::action::extract_action;

/// Why a response holds no submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCode {
    /// No `<action>` tag (a closed pair, or one left open at the end of the response).
    NoAction,
    /// The tag (after removing a code fence) holds only white space.
    Empty,
}

impl NoCode {
    /// The `info.outcome` value.
    pub fn outcome(self) -> &'static str {
        match self {
            NoCode::NoAction => "no_action",
            NoCode::Empty => "empty_code",
        }
    }

    /// What the agent is told.
    pub fn message(self) -> &'static str {
        match self {
            NoCode::NoAction => {
                "Your last response had no <action>...</action> with code in it, so nothing was run."
            }
            NoCode::Empty => "Your last response had an empty <action></action>, so nothing was run.",
        }
    }
}

/// The code inside the last `<action>...</action>` of `response`, without a Markdown code fence
/// (```` ```python ```` ... ```` ``` ````) when the tag holds one.
pub fn extract_code(response: &str) -> Result<String, NoCode> {
    // A response cut by EOS or the token limit after `<action>` still holds its code: small
    // models often end the function and stop without closing the tag.
    let action = extract_action(response)
        .or_else(|| unclosed_action(response))
        .ok_or(NoCode::NoAction)?;
    let code = strip_fence(action);
    if code.trim().is_empty() {
        return Err(NoCode::Empty);
    }
    Ok(code.trim_end().to_string() + "\n")
}

/// Everything after the last `<action>` when no `</action>` follows it.
fn unclosed_action(response: &str) -> Option<&str> {
    // ASCII lower-casing keeps byte offsets, so the index maps back to `response`.
    let lower = response.to_ascii_lowercase();
    let open = lower.rfind("<action>")?;
    let body = open + "<action>".len();
    (!lower[body..].contains("</action>")).then(|| &response[body..])
}

/// The first fenced block of `text` when there is one (an unclosed fence runs to the end), else
/// `text` itself. Text around the fence (a sentence before it, say) is dropped.
pub fn strip_fence(text: &str) -> &str {
    let mut offset = 0;
    let mut body_start = None;
    for line in text.split_inclusive('\n') {
        let is_fence = line.trim_start().starts_with("```");
        match body_start {
            None if is_fence => body_start = Some(offset + line.len()),
            Some(start) if is_fence && line.trim() == "```" => return &text[start..offset],
            _ => {}
        }
        offset += line.len();
    }
    match body_start {
        Some(start) => &text[start.min(text.len())..],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unclosed_action_runs_to_the_end() {
        let r = "<action>\n```python\ndef f():\n    return 1\n```\n\nThis function returns 1.";
        assert_eq!(extract_code(r).unwrap(), "def f():\n    return 1\n");
        assert_eq!(
            extract_code("<ACTION>def f(): pass").unwrap(),
            "def f(): pass\n"
        );
        assert_eq!(extract_code("no tag at all"), Err(NoCode::NoAction));
    }

    #[test]
    fn plain_code_is_kept() {
        assert_eq!(
            extract_code("<action>def f():\n    return 1</action>").unwrap(),
            "def f():\n    return 1\n"
        );
    }

    #[test]
    fn fences_are_stripped() {
        let r = "I think:\n<action>\n```python\ndef f():\n    return 1\n```\n</action>";
        assert_eq!(extract_code(r).unwrap(), "def f():\n    return 1\n");
        let r = "<action>```py\ndef f():\n    return 1\n</action>";
        assert_eq!(extract_code(r).unwrap(), "def f():\n    return 1\n");
        let r = "<action>Here it is:\n```\nx = 1\n```\nmore text\n```\ny\n```</action>";
        assert_eq!(extract_code(r).unwrap(), "x = 1\n");
        // A closing-looking line with text after the backticks does not close the fence.
        assert_eq!(strip_fence("```\na\n```python\nb"), "a\n```python\nb");
    }

    #[test]
    fn missing_or_empty_is_no_code() {
        assert_eq!(extract_code("def f(): pass"), Err(NoCode::NoAction));
        assert_eq!(extract_code("<action>  \n</action>"), Err(NoCode::Empty));
        assert_eq!(
            extract_code("<action>```python\n```</action>"),
            Err(NoCode::Empty)
        );
        assert_eq!(extract_code("<action>```</action>"), Err(NoCode::Empty));
    }
}
