//! Prompt templates: built-in defaults (the trainer's and the SGE method's in this folder, each
//! env's in its spec in quester-envs; embedded at compile time), overridable by a file path or a
//! built-in name in the config, and a one-pass `{placeholder}` renderer.

use std::path::Path;

use crate::error::TrainError;

/// The trainer's own templates (any env) and the SGE method's response formats.
const EMBEDDED: &[(&str, &str)] = &[
    ("default_play", include_str!("default_play.txt")),
    ("default_reflect", include_str!("default_reflect.txt")),
    ("sge_play", include_str!("sge_play.txt")),
    ("sge_terse_play", include_str!("sge_terse_play.txt")),
    ("sge_coding_play", include_str!("sge_coding_play.txt")),
    (
        "sge_minesweeper_play",
        include_str!("sge_minesweeper_play.txt"),
    ),
    ("sge_sokoban_play", include_str!("sge_sokoban_play.txt")),
];

/// The play and reflection templates of one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplates {
    pub play: String,
    pub reflect: String,
    /// Text every play response is forced to start with (e.g. `<action>`): appended to the
    /// rendered prompt, so the model continues after it. Empty: none.
    pub play_prefix: String,
    /// The same for reflection responses (e.g. `<remark>`).
    pub reflect_prefix: String,
}

/// The built-in template `name`: the trainer's, else any env's (e.g. `sokoban_terse_play`).
fn embedded(name: &str) -> Option<&'static str> {
    EMBEDDED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .or_else(|| quester_envs::prompt(name))
}

impl PromptTemplates {
    /// The built-in templates of `env`: its spec's `<env>_play` / `<env>_reflect` when present,
    /// else the defaults.
    pub fn builtin(env: &str) -> Self {
        let spec = quester_envs::spec(env).ok();
        let pick = |kind: &str| {
            spec.and_then(|s| s.prompt(&format!("{env}_{kind}")))
                .or_else(|| embedded(&format!("default_{kind}")))
                .unwrap_or_default()
                .to_string()
        };
        Self {
            play: pick("play"),
            reflect: pick("reflect"),
            play_prefix: String::new(),
            reflect_prefix: String::new(),
        }
    }

    /// Built-in templates with optional overrides (empty = built-in): a file path, or the name
    /// of a built-in template (`default_play`, `sge_play`, an env's such as
    /// `sokoban_terse_play`) when no such file exists.
    pub(crate) fn load(env: &str, play_path: &str, reflect_path: &str) -> Result<Self, TrainError> {
        let mut t = Self::builtin(env);
        let read = |p: &str| match (Path::new(p).exists(), embedded(p)) {
            (false, Some(text)) => Ok(text.to_string()),
            _ => std::fs::read_to_string(p).map_err(|e| TrainError::io(Path::new(p), e)),
        };
        if !play_path.is_empty() {
            t.play = read(play_path)?;
        }
        if !reflect_path.is_empty() {
            t.reflect = read(reflect_path)?;
        }
        Ok(t)
    }

    /// The templates and response prefixes a config asks for.
    pub fn from_config(cfg: &crate::config::TrainConfig) -> Result<Self, TrainError> {
        let p = &cfg.prompt;
        let mut t = Self::load(&cfg.env.name, &p.play_template, &p.reflect_template)?;
        t.play_prefix = p.play_prefix.clone();
        t.reflect_prefix = p.reflect_prefix.clone();
        Ok(t)
    }
}

/// Replaces `{key}` by its value for every known key, in one left-to-right pass: text inserted
/// from a value is never scanned again (observations may contain braces).
pub(crate) fn render(template: &str, vars: &[(&str, &str)]) -> String {
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
    fn builtin_names_are_accepted_as_overrides() {
        let t = PromptTemplates::load("sokoban", "sokoban_terse_play", "sokoban_terse_reflect")
            .unwrap();
        assert!(t.play.starts_with("Sokoban.") && t.reflect.contains("<remark>"));
    }

    #[test]
    fn every_builtin_name_resolves() {
        for name in [
            "default_play",
            "default_reflect",
            "bandit_play",
            "bandit_reflect",
            "scienceworld_terse_play",
            "sokoban_terse_play",
            "sokoban_terse_reflect",
            "kuhn_terse_play",
            "kuhn_terse_reflect",
            "tictactoe_terse_play",
            "tictactoe_terse_reflect",
            "instruction_play",
            "sge_play",
            "sge_terse_play",
            "sge_coding_play",
            "sge_minesweeper_play",
            "sge_sokoban_play",
            "coding_play",
        ] {
            assert!(embedded(name).is_some_and(|t| !t.is_empty()), "{name}");
        }
        // An env's own `<env>_play` is its default; others fall back to `default_*`.
        assert_eq!(
            PromptTemplates::builtin("coding").play,
            embedded("coding_play").unwrap()
        );
        assert_eq!(
            PromptTemplates::builtin("coding").reflect,
            embedded("default_reflect").unwrap()
        );
        assert_eq!(
            PromptTemplates::builtin("nope").play,
            embedded("default_play").unwrap()
        );
    }

    #[test]
    fn missing_override_file_names_the_path() {
        let e = PromptTemplates::load("sokoban", "/nonexistent/p.txt", "").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/p.txt"));
    }
}
