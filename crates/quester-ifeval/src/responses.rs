//! Response files: JSON Lines with one `{"prompt": ..., "response": ...}` object per line, the
//! format of Google's `evaluation_main.py --input_response_data` and of the samples
//! lm-evaluation-harness logs. Extra keys are ignored.
//!
//! Reading matches each record to an IFEval prompt by EXACT prompt text (four prompts end in
//! whitespace, so the text must be reproduced byte for byte). A file that leaves prompts
//! unanswered is an error reporting how many are missing, rather than silently scoring them
//! as empty responses: an incomplete file is almost always a truncated generation run, and
//! scoring it would quietly lower every accuracy. A prompt answered twice is an error too.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{prompts, IfevalError, IfevalPrompt};

/// One line of a response file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRecord {
    pub prompt: String,
    pub response: String,
}

const WHAT: &str = "response file";

/// Parses a response JSONL into records with their 1-based line numbers. Blank lines are
/// skipped; a malformed line or one without string `prompt` and `response` is an error naming
/// the line.
pub fn parse_response_records(text: &str) -> Result<Vec<(usize, ResponseRecord)>, IfevalError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: ResponseRecord =
            serde_json::from_str(line).map_err(|source| IfevalError::Json {
                what: WHAT,
                line: i + 1,
                source,
            })?;
        out.push((i + 1, record));
    }
    Ok(out)
}

/// Matches the records of a response JSONL to `prompts`, returning one response per prompt
/// in the order of `prompts`.
pub fn match_responses(prompts: &[IfevalPrompt], text: &str) -> Result<Vec<String>, IfevalError> {
    let index: HashMap<&str, usize> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| (p.prompt.as_str(), i))
        .collect();
    let mut found: Vec<Option<(usize, String)>> = vec![None; prompts.len()];
    for (line, record) in parse_response_records(text)? {
        let Some(&i) = index.get(record.prompt.as_str()) else {
            return Err(IfevalError::Line {
                what: WHAT,
                line,
                message: format!(
                    "the prompt is not one of IFEval's (matched by exact text): {:?}",
                    excerpt(&record.prompt)
                ),
            });
        };
        if let Some((first, _)) = &found[i] {
            return Err(IfevalError::Line {
                what: WHAT,
                line,
                message: format!(
                    "prompt {} was already answered on line {first}",
                    prompts[i].key
                ),
            });
        }
        found[i] = Some((line, record.response));
    }
    let missing: Vec<u64> = prompts
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|(p, _)| p.key)
        .collect();
    if !missing.is_empty() {
        return Err(IfevalError::MissingResponses {
            missing: missing.len(),
            total: prompts.len(),
            examples: missing.into_iter().take(5).collect(),
        });
    }
    Ok(found.into_iter().flatten().map(|(_, r)| r).collect())
}

/// The responses of a response JSONL to the 541 IFEval prompts, in the order of [`prompts`].
pub fn read_responses(text: &str) -> Result<Vec<String>, IfevalError> {
    match_responses(prompts(), text)
}

/// [`read_responses`] on a file.
pub fn read_responses_file(path: &Path) -> Result<Vec<String>, IfevalError> {
    let text = std::fs::read_to_string(path).map_err(|source| IfevalError::Io {
        path: path.to_path_buf(),
        action: "reading the response file",
        source,
    })?;
    read_responses(&text)
}

/// Writes records as JSON Lines.
pub fn write_responses<W: Write>(mut out: W, records: &[ResponseRecord]) -> std::io::Result<()> {
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

/// [`write_responses`] to a file (created or truncated).
pub fn write_responses_file(path: &Path, records: &[ResponseRecord]) -> Result<(), IfevalError> {
    let io_err = |source| IfevalError::Io {
        path: path.to_path_buf(),
        action: "writing the response file",
        source,
    };
    let file = std::fs::File::create(path).map_err(io_err)?;
    write_responses(std::io::BufWriter::new(file), records).map_err(io_err)
}

/// The first 80 characters of a text, for error messages.
pub(crate) fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if text.chars().nth(80).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_records() -> Vec<ResponseRecord> {
        prompts()
            .iter()
            .map(|p| ResponseRecord {
                prompt: p.prompt.clone(),
                response: format!("answer {}", p.key),
            })
            .collect()
    }

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        write_responses(&mut buf, &all_records()).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let responses = read_responses(&text).unwrap();
        assert_eq!(responses.len(), 541);
        assert_eq!(responses[0], format!("answer {}", prompts()[0].key));
    }

    #[test]
    fn extra_keys_are_accepted() {
        let p = &prompts()[0];
        let line = serde_json::json!({"prompt": p.prompt, "response": "x", "model": "m", "n": 3});
        let recs = parse_response_records(&line.to_string()).unwrap();
        assert_eq!(recs[0].1.response, "x");
    }

    #[test]
    fn errors_name_lines_and_counts() {
        let err = read_responses("{\"prompt\": \"x\"}\n").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        let err =
            read_responses("\n{\"prompt\": \"not ifeval\", \"response\": \"\"}\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = read_responses("not json\n").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        let mut buf = Vec::new();
        write_responses(&mut buf, &all_records()[..540]).unwrap();
        let err = read_responses(std::str::from_utf8(&buf).unwrap()).unwrap_err();
        assert!(err.to_string().starts_with("1 of the 541"), "{err}");
    }

    #[test]
    fn trailing_whitespace_of_prompts_matters() {
        let p = prompts().iter().find(|p| p.key == 1999).unwrap();
        assert_ne!(p.prompt.trim_end(), p.prompt);
        let line = serde_json::json!({"prompt": p.prompt.trim_end(), "response": "x"});
        assert!(read_responses(&line.to_string()).is_err());
    }
}
