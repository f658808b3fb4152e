//! Reading chat examples: one JSON object per line with a `messages` array of
//! `{"role", "content"}` (other keys are kept only to group a line with its episode).

use std::path::{Path, PathBuf};

use quester_model::ChatMessage;
use serde::Deserialize;

/// A line that is not a chat example, or a file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{0} holds no chat example")]
    Empty(PathBuf),
}

/// One example.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// 1-based line number in the file.
    pub line: usize,
    pub messages: Vec<ChatMessage>,
    /// Lines of one episode share it (`env/seed/episode` where the line names them, else the
    /// line itself): validation holds out whole groups.
    pub group: String,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct Line {
    messages: Vec<Message>,
    env: Option<String>,
    seed: Option<u64>,
    episode: Option<u64>,
}

/// Every example of the JSONL at `path` (blank lines skipped).
pub fn read_examples(path: &Path) -> Result<Vec<Example>, DataError> {
    let text = std::fs::read_to_string(path).map_err(|source| DataError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let bad = |message: String| DataError::Line {
            path: path.to_path_buf(),
            line,
            message,
        };
        let parsed: Line = serde_json::from_str(raw).map_err(|e| {
            bad(format!(
                "not a chat example ({e}); expected {{\"messages\": [{{\"role\": ..., \"content\": ...}}, ...]}}"
            ))
        })?;
        if parsed.messages.is_empty() {
            return Err(bad("`messages` is empty".into()));
        }
        if !parsed.messages.iter().any(|m| m.role == "assistant") {
            return Err(bad("no assistant message to train on".into()));
        }
        let group = match (parsed.env, parsed.seed, parsed.episode) {
            (Some(env), Some(seed), Some(ep)) => format!("{env}/{seed}/{ep}"),
            _ => format!("line {line}"),
        };
        out.push(Example {
            line,
            messages: parsed
                .messages
                .into_iter()
                .map(|m| ChatMessage::new(m.role, m.content))
                .collect(),
            group,
        });
    }
    if out.is_empty() {
        return Err(DataError::Empty(path.to_path_buf()));
    }
    Ok(out)
}

/// Whether `group` is held out for validation: a stable hash of the group and the seed decides,
/// so the split never depends on the order of the file.
pub fn is_validation(group: &str, seed: u64, fraction: f64) -> bool {
    if fraction <= 0.0 {
        return false;
    }
    let h = quester_envs::instruction::fnv1a64(group.as_bytes());
    let x = crate::rng::derive(seed, &[0x5F7, h]);
    (x as f64 / u64::MAX as f64) < fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.jsonl");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn reads_examples_and_groups_them_by_episode() {
        let (_d, p) = file(concat!(
            r#"{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"env":"sokoban","seed":3,"episode":0,"turn":0}"#,
            "\n\n",
            r#"{"messages":[{"role":"user","content":"c"},{"role":"assistant","content":"d"}]}"#,
            "\n"
        ));
        let ex = read_examples(&p).unwrap();
        assert_eq!(ex.len(), 2);
        assert_eq!(ex[0].group, "sokoban/3/0");
        assert_eq!(ex[1].group, "line 3");
        assert_eq!(ex[1].line, 3);
        assert_eq!(ex[1].messages[1].content, "d");
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let (_d, p) = file(concat!(
            r#"{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}"#,
            "\n",
            r#"{"messages":[{"role":"user","content":"a"}]}"#,
            "\n"
        ));
        let e = read_examples(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("d.jsonl:2: no assistant message to train on"),
            "{e}"
        );
        let (_d, p) = file("{\"messages\": 3}\n");
        let e = read_examples(&p).unwrap_err().to_string();
        assert!(e.contains("d.jsonl:1: not a chat example"), "{e}");
        let (_d, p) = file("\n\n");
        assert!(matches!(read_examples(&p), Err(DataError::Empty(_))));
    }

    #[test]
    fn the_validation_split_is_stable_and_near_its_fraction() {
        let groups: Vec<String> = (0..4000).map(|i| format!("env/{i}/0")).collect();
        let held = groups.iter().filter(|g| is_validation(g, 7, 0.1)).count();
        // Binomial(4000, 0.1): sd about 19.
        assert!((300..=500).contains(&held), "{held}");
        assert!(groups.iter().all(|g| !is_validation(g, 7, 0.0)));
        assert_eq!(is_validation("a", 1, 0.5), is_validation("a", 1, 0.5));
    }
}
