//! Reading JSON-lines files written by a run (possibly still running, or killed mid-line).

use std::path::Path;

use serde_json::{Map, Value};

use super::ReportError;

/// The objects of a JSONL file, and a note for each line that was skipped.
#[derive(Debug, Default, Clone)]
pub struct JsonlRows {
    /// One map per valid line, in file order.
    pub rows: Vec<Map<String, Value>>,
    /// `file:line: why` for every skipped line.
    pub skipped: Vec<String>,
}

/// Reads `path`; `Ok(None)` when the file does not exist. Blank lines are ignored; lines that are
/// not JSON objects are skipped with a note (a run killed mid-write leaves a partial last line).
pub fn read_jsonl(path: &Path) -> Result<Option<JsonlRows>, ReportError> {
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReportError::io(path, e)),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = JsonlRows::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => out.rows.push(map),
            Ok(_) => out
                .skipped
                .push(format!("{name}:{}: not a JSON object", i + 1)),
            Err(e) => out.skipped.push(format!("{name}:{}: {e}", i + 1)),
        }
    }
    Ok(Some(out))
}
