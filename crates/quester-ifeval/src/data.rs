//! The 541 IFEval prompts, embedded from `data/ifeval/input_data.jsonl` (CC BY 4.0, see
//! `data/ifeval/README.md`; held-out evaluation only).

use std::sync::OnceLock;

use serde::Deserialize;

use crate::{IfevalError, Instruction};

/// One IFEval prompt with its instructions.
#[derive(Debug, Clone, PartialEq)]
pub struct IfevalPrompt {
    /// The prompt's `key` in the data.
    pub key: u64,
    /// The exact prompt text (4 prompts end in whitespace; keep it byte-exact).
    pub prompt: String,
    /// The instructions, in the order of `instruction_id_list`.
    pub instructions: Vec<Instruction>,
    /// The raw ids (`instructions[i].id() == ids[i]`).
    pub ids: Vec<String>,
}

#[derive(Deserialize)]
struct RawPrompt {
    key: u64,
    prompt: String,
    instruction_id_list: Vec<String>,
    kwargs: Vec<serde_json::Map<String, serde_json::Value>>,
}

const EMBEDDED: &str = include_str!("../../../data/ifeval/input_data.jsonl");

/// The 541 prompts of IFEval, parsed once.
///
/// The embedded file is checked by this crate's tests, so parsing cannot fail at run time; if
/// it somehow did, this returns an empty slice rather than panicking.
pub fn prompts() -> &'static [IfevalPrompt] {
    static PROMPTS: OnceLock<Vec<IfevalPrompt>> = OnceLock::new();
    PROMPTS.get_or_init(|| parse_prompts(EMBEDDED).unwrap_or_default())
}

/// Parses IFEval's prompt JSONL (`key`, `prompt`, `instruction_id_list`, `kwargs` per line).
/// Blank lines are skipped; an error names the 1-based line.
pub fn parse_prompts(text: &str) -> Result<Vec<IfevalPrompt>, IfevalError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let raw: RawPrompt = serde_json::from_str(line).map_err(|source| IfevalError::Json {
            what: "prompt data",
            line: line_no,
            source,
        })?;
        if raw.kwargs.len() != raw.instruction_id_list.len() {
            return Err(IfevalError::Line {
                what: "prompt data",
                line: line_no,
                message: format!(
                    "prompt {}: {} instruction ids but {} kwargs entries",
                    raw.key,
                    raw.instruction_id_list.len(),
                    raw.kwargs.len()
                ),
            });
        }
        let instructions = raw
            .instruction_id_list
            .iter()
            .zip(&raw.kwargs)
            .enumerate()
            .map(|(index, (id, kwargs))| {
                Instruction::from_kwargs(id, kwargs).map_err(|source| {
                    IfevalError::PromptInstruction {
                        key: raw.key,
                        index,
                        id: id.clone(),
                        source: Box::new(source),
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| IfevalError::PromptLine {
                line: line_no,
                source: Box::new(source),
            })?;
        out.push(IfevalPrompt {
            key: raw.key,
            prompt: raw.prompt,
            instructions,
            ids: raw.instruction_id_list,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_data_parses() {
        let parsed = parse_prompts(EMBEDDED).expect("embedded IFEval data");
        assert_eq!(parsed.len(), 541);
        assert_eq!(
            parsed.iter().map(|p| p.instructions.len()).sum::<usize>(),
            834
        );
        assert_eq!(prompts().len(), 541);
        for p in parsed {
            for (inst, id) in p.instructions.iter().zip(&p.ids) {
                assert_eq!(inst.id(), id);
            }
        }
    }

    #[test]
    fn errors_name_the_line() {
        let text = "{\"key\": 1, \"prompt\": \"p\", \"instruction_id_list\": [], \"kwargs\": []}\n\
                    {\"key\": 2, \"prompt\": \"p\", \"instruction_id_list\": [\"x:y\"], \"kwargs\": [{}]}\n";
        let err = parse_prompts(text).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let text = "{\"key\": 1, \"prompt\": \"p\"\n";
        assert!(parse_prompts(text)
            .unwrap_err()
            .to_string()
            .contains("line 1"));
    }
}
