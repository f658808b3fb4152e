//! Prompt templates: built-in defaults from configs/prompts/ (embedded at compile time),
//! overridable by a file path in the config, and a one-pass `{placeholder}` renderer.

use std::path::Path;

use crate::error::TrainError;

const EMBEDDED: &[(&str, &str)] = &[
    (
        "default_play",
        include_str!("../../../configs/prompts/default_play.txt"),
    ),
    (
        "default_reflect",
        include_str!("../../../configs/prompts/default_reflect.txt"),
    ),
    (
        "bandit_play",
        include_str!("../../../configs/prompts/bandit_play.txt"),
    ),
    (
        "bandit_reflect",
        include_str!("../../../configs/prompts/bandit_reflect.txt"),
    ),
];

/// The play and reflection templates of one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplates {
    pub play: String,
    pub reflect: String,
}

fn embedded(name: &str) -> Option<&'static str> {
    EMBEDDED.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

impl PromptTemplates {
    /// The built-in templates of `env` (its own when present, else the defaults).
    pub fn builtin(env: &str) -> Self {
        let pick = |kind: &str| {
            embedded(&format!("{env}_{kind}"))
                .or_else(|| embedded(&format!("default_{kind}")))
                .unwrap_or_default()
                .to_string()
        };
        Self {
            play: pick("play"),
            reflect: pick("reflect"),
        }
    }

    /// Built-in templates with optional file overrides (empty path = built-in).
    pub fn load(env: &str, play_path: &str, reflect_path: &str) -> Result<Self, TrainError> {
        let mut t = Self::builtin(env);
        let read =
            |p: &str| std::fs::read_to_string(p).map_err(|e| TrainError::io(Path::new(p), e));
        if !play_path.is_empty() {
            t.play = read(play_path)?;
        }
        if !reflect_path.is_empty() {
            t.reflect = read(reflect_path)?;
        }
        Ok(t)
    }
}

/// Replaces `{key}` by its value for every known key, in one left-to-right pass: text inserted
/// from a value is never scanned again (observations may contain braces).
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let hit = after.find('}').and_then(|close| {
            let key = &after[..close];
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (close, *v))
        });
        match hit {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_once_and_keeps_unknown_braces() {
        let s = render("a {x} b {y} {z} {", &[("x", "{y}"), ("y", "2")]);
        assert_eq!(s, "a {y} b 2 {z} {");
    }

    #[test]
    fn env_specific_template_wins() {
        assert!(PromptTemplates::builtin("bandit")
            .play
            .starts_with("{rules}"));
        assert!(PromptTemplates::builtin("sokoban")
            .play
            .contains("<action>"));
        assert!(PromptTemplates::builtin("sokoban")
            .reflect
            .contains("<remark>"));
    }

    #[test]
    fn missing_override_file_names_the_path() {
        let e = PromptTemplates::load("sokoban", "/nonexistent/p.txt", "").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/p.txt"));
    }
}
