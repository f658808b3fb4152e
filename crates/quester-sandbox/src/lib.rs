//! Running untrusted Python (model-written code) in a sandboxed `python3` subprocess.
//!
//! [`Sandbox::run_python`] runs a program; [`Sandbox::run_tests`] runs a submission against a
//! HumanEval-style `check(candidate)` and reports every assert-statement as its own test.
//! Whatever the submitted code does comes back as an `Ok` outcome describing it;
//! [`SandboxError`] is only for failures of the sandbox itself.
//!
//! The layers (each probed once per process, each used only where it works; see
//! [`Protections`] and docs/sandbox.md): own session and process group killed whole at the end,
//! rlimits, network, pid and IPC namespaces, a per-run uid when running as root, no
//! capabilities, Landlock, a seccomp filter (IP sockets only, no io_uring, ptrace or keyrings),
//! and Python-level guards in the harness.

mod capture;
mod child;
mod landlock;
mod probe;
mod report;
mod seccomp;

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use probe::{Layers, Protections};

use child::Isolation;
use report::Event;

/// The harness that runs inside the sandbox (Python source). The probe compiles it once per
/// process with the interpreter itself; each run gets the code object on stdin through `BOOT`,
/// because compiling it on every start would cost more than the rest of the harness.
pub const HARNESS: &str = include_str!("harness.py");

/// What `python3 -c` runs: reads one length-prefixed field (the marshalled harness) off stdin
/// and runs it. The harness then reads the job from the same stdin.
const BOOT: &str = "import marshal, posix\n\
def _load():\n    \
    head = b''\n    \
    while not head.endswith(b'\\n'):\n        \
        c = posix.read(0, 1)\n        \
        if not c or len(head) > 20:\n            \
            posix._exit(70)\n        \
        head += c\n    \
    n, parts = int(head), []\n    \
    while n > 0:\n        \
        part = posix.read(0, n)\n        \
        if not part:\n            \
            posix._exit(70)\n        \
        parts.append(part)\n        \
        n -= len(part)\n    \
    return marshal.loads(b''.join(parts))\n\
_harness = _load()\n\
del _load, marshal, posix\n\
exec(_harness)\n";

/// Output kept from the result channel; the harness's own lines are far smaller.
const RESULT_CAP: usize = 8 << 20;

/// Resource limits of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Wall-clock limit of the whole run; then the process group is killed.
    pub wall: Duration,
    /// RLIMIT_CPU of each process (soft = hard: SIGKILL at the limit).
    pub cpu_seconds: u64,
    /// RLIMIT_AS: address space of each process.
    pub memory_bytes: u64,
    /// RLIMIT_NPROC (counts threads too); binds root only with the uid drop.
    pub max_processes: u64,
    /// Bytes kept of each of stdout and stderr; the rest is read and dropped.
    pub max_output_bytes: usize,
    /// RLIMIT_FSIZE: the largest file the program may write.
    pub max_file_bytes: u64,
    /// Timer of each test in `run_tests` (SIGALRM in the harness).
    pub per_test: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall: Duration::from_secs(10),
            cpu_seconds: 5,
            memory_bytes: 1 << 30,
            max_processes: 32,
            max_output_bytes: 64 << 10,
            max_file_bytes: 16 << 20,
            per_test: Duration::from_secs(3),
        }
    }
}

/// Failures of the sandbox itself (never of the code it runs).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    #[error("python3 was not found on PATH ({path}); the sandbox needs Python 3.8 or newer")]
    PythonNotFound { path: String },
    #[error("{} cannot be used by the sandbox: {detail}", interpreter.display())]
    PythonUnusable {
        interpreter: std::path::PathBuf,
        detail: String,
    },
    #[error("could not create the sandbox's temporary directory")]
    TempDir(#[source] Arc<std::io::Error>),
    #[error("could not start the sandboxed python3")]
    Spawn(#[source] Arc<std::io::Error>),
    #[error("sandbox i/o failed: {what}")]
    Io {
        what: &'static str,
        #[source]
        source: Arc<std::io::Error>,
    },
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Termination {
    /// Exit status.
    Exited(i32),
    /// Killed by this signal (not by the sandbox's wall-clock kill).
    Signaled(i32),
    /// Killed by the sandbox at `Limits::wall`.
    WallTimeout,
    /// RLIMIT_CPU reached (SIGKILL at the limit, or SIGXCPU).
    CpuLimit,
    /// The program stopped on a MemoryError (the address-space limit), as the harness saw.
    MemoryLimit,
}

/// What one run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Execution {
    pub termination: Termination,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub elapsed: Duration,
    /// The interpreter's pid, which is also its session and process group id.
    pub pid: u32,
    /// The uid it ran as, where the per-run uid is on.
    pub uid: Option<u32>,
}

/// One failing test of `run_tests`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestFailure {
    pub index: usize,
    /// The test's source text.
    pub source: String,
    /// E.g. "AssertionError", "NameError: ...", "timed out after 3 s", "not run: ...".
    pub message: String,
}

/// The outcome of `run_tests`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestReport {
    /// Number of tests found in check().
    pub total: usize,
    /// Sorted indices of the tests that passed.
    pub passed: Vec<usize>,
    /// Failing tests in order (tests that never ran included, with a "not run: ..." message).
    pub failures: Vec<TestFailure>,
    /// The program as a whole failed (short, human readable).
    pub error: Option<String>,
    pub execution: Execution,
}

impl TestReport {
    pub fn all_passed(&self) -> bool {
        self.total > 0 && self.passed.len() == self.total && self.error.is_none()
    }
}

/// Runs Python in a sandbox; cheap to keep and share between threads.
#[derive(Clone)]
pub struct Sandbox {
    limits: Limits,
    isolation: Isolation,
    interpreter: &'static Path,
    harness: &'static [u8],
    protections: Protections,
}

impl std::fmt::Debug for Sandbox {
    // Not derived: the compiled harness is 28 KB of bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("limits", &self.limits)
            .field("protections", &self.protections)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Finds python3 and (once per process) which layers work here; uses all of those.
    pub fn new(limits: Limits) -> Result<Sandbox, SandboxError> {
        Sandbox::with_layers(limits, Layers::default())
    }

    /// Like `new`, using only the requested layers (where they work). The process group kill,
    /// the rlimits and the Python guards are always on.
    pub fn with_layers(limits: Limits, layers: Layers) -> Result<Sandbox, SandboxError> {
        let probe = probe::probe()?;
        Ok(Sandbox {
            limits,
            isolation: probe.isolation(layers),
            interpreter: &probe.interpreter,
            harness: &probe.harness,
            protections: probe.protections(layers),
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn protections(&self) -> &Protections {
        &self.protections
    }

    /// Runs `source` as a program (`__name__ == "__main__"`) with `stdin` as its standard input.
    pub fn run_python(&self, source: &str, stdin: &[u8]) -> Result<Execution, SandboxError> {
        let (execution, _) = execute(
            self.interpreter,
            self.harness,
            self.isolation,
            &self.limits,
            &["run", source],
            stdin,
            Some(source),
        )?;
        Ok(execution)
    }

    /// Runs the submission `setup`, then the top-level statements of `test_source`, then each
    /// assert-statement of its `check(candidate)` as one test against `entry_point`.
    pub fn run_tests(
        &self,
        setup: &str,
        test_source: &str,
        entry_point: &str,
    ) -> Result<TestReport, SandboxError> {
        let per_test = self.limits.per_test.as_secs_f64().to_string();
        let label = report::seconds(self.limits.per_test);
        let job = ["tests", setup, test_source, entry_point, &per_test, &label];
        let (execution, events) = execute(
            self.interpreter,
            self.harness,
            self.isolation,
            &self.limits,
            &job,
            &[],
            None,
        )?;
        Ok(report::test_report(events, execution, &self.limits))
    }
}

pub(crate) fn rlimits(limits: &Limits) -> child::Rlimits {
    child::Rlimits {
        cpu_seconds: limits.cpu_seconds,
        memory_bytes: limits.memory_bytes,
        max_processes: limits.max_processes,
        max_file_bytes: limits.max_file_bytes,
    }
}

/// The whole environment of the child (it starts from an empty one).
pub(crate) fn child_env(dir: &Path) -> Vec<(&'static str, OsString)> {
    vec![
        ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME", dir.as_os_str().to_owned()),
        ("TMPDIR", dir.as_os_str().to_owned()),
        ("LANG", "C.UTF-8".into()),
        ("LC_ALL", "C.UTF-8".into()),
    ]
}

/// 128 random bits as hex: the result channel's tag.
pub(crate) fn nonce() -> String {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: writes at most the remaining length into `bytes`.
        let r = unsafe {
            libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0)
        };
        if r <= 0 {
            break;
        }
        filled += r as usize;
    }
    if filled < bytes.len() {
        // getrandom is missing or failed (very old kernel): read the device instead.
        use std::io::Read;
        if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
            let _ = f.read_exact(&mut bytes);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Removes the run's directory even where the program left folders without write permission.
pub(crate) fn remove_tree(dir: tempfile::TempDir) {
    use std::os::unix::fs::PermissionsExt;
    fn open_up(p: &Path) {
        if let Ok(entries) = std::fs::read_dir(p) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let path = entry.path();
                    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
                    open_up(&path);
                }
            }
        }
    }
    let path = dir.path().to_path_buf();
    if std::fs::remove_dir_all(&path).is_err() {
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
        open_up(&path);
    }
    // TempDir's drop removes what is left and ignores errors.
    drop(dir);
}

/// One run of the harness with `job` (the fields after the nonce: mode, then the mode's own).
fn execute(
    interpreter: &Path,
    harness: &[u8],
    isolation: Isolation,
    limits: &Limits,
    job: &[&str],
    stdin: &[u8],
    main_py: Option<&str>,
) -> Result<(Execution, Vec<Event>), SandboxError> {
    let dir = tempfile::Builder::new()
        .prefix("quester-sandbox-")
        .tempdir()
        .map_err(|e| SandboxError::TempDir(Arc::new(e)))?;
    if let Some(source) = main_py {
        // On disk only so that tracebacks can show the lines.
        std::fs::write(dir.path().join("main.py"), source).map_err(|e| SandboxError::Io {
            what: "writing main.py",
            source: Arc::new(e),
        })?;
    }
    let nonce = nonce();
    let mut input = format!("{}\n", harness.len()).into_bytes();
    input.extend_from_slice(harness);
    for field in std::iter::once(nonce.as_str()).chain(job.iter().copied()) {
        input.extend_from_slice(format!("{}\n", field.len()).as_bytes());
        input.extend_from_slice(field.as_bytes());
    }
    input.extend_from_slice(stdin);

    let env = child_env(dir.path());
    let env_refs: Vec<(&str, &std::ffi::OsStr)> =
        env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let outcome = child::run(child::Config {
        interpreter,
        args: &["-I", "-S", "-B", "-X", "utf8", "-c", BOOT],
        cwd: dir.path(),
        env: &env_refs,
        stdin: input,
        wall: limits.wall,
        rlimits: rlimits(limits),
        isolation,
        output_cap: limits.max_output_bytes,
        result_cap: RESULT_CAP,
    });
    remove_tree(dir);
    let outcome = outcome?;
    let events = report::parse_events(&outcome.results.bytes, &nonce);
    let termination = termination(&outcome, limits, report::memory_reported(&events));
    let execution = Execution {
        termination,
        stdout: outcome.stdout.text(),
        stderr: outcome.stderr.text(),
        stdout_truncated: outcome.stdout.truncated,
        stderr_truncated: outcome.stderr.truncated,
        elapsed: outcome.elapsed,
        pid: outcome.pid,
        uid: outcome.uid,
    };
    Ok((execution, events))
}

fn termination(outcome: &child::Outcome, limits: &Limits, memory: bool) -> Termination {
    let status = outcome.status;
    if outcome.wall_killed {
        Termination::WallTimeout
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // The kernel's limit check counts precise run time, rusage sampled ticks: 2.85 s
        // seen for a 3 s limit under load. Nothing else sends SIGKILL after most of the
        // budget is spent, short of the OOM killer.
        let cpu_spent = outcome.cpu.as_secs_f64() >= 0.8 * limits.cpu_seconds as f64;
        if sig == libc::SIGXCPU || (sig == libc::SIGKILL && cpu_spent) {
            Termination::CpuLimit
        } else {
            Termination::Signaled(sig)
        }
    } else if memory {
        Termination::MemoryLimit
    } else {
        Termination::Exited(libc::WEXITSTATUS(status))
    }
}

/// The probe's last check: the harness under all the layers passes a trivial test.
pub(crate) fn smoke_test(
    interpreter: &Path,
    harness: &[u8],
    isolation: Isolation,
) -> Result<(), String> {
    let limits = Limits {
        wall: Duration::from_secs(20),
        ..Limits::default()
    };
    let job = [
        "tests",
        "def one():\n    return 1\n",
        "def check(candidate):\n    assert candidate() == 1\n",
        "one",
        "3",
        "3 s",
    ];
    let (execution, events) = execute(interpreter, harness, isolation, &limits, &job, &[], None)
        .map_err(|e| probe::error_chain(&e))?;
    let report = report::test_report(events, execution, &limits);
    if report.all_passed() {
        Ok(())
    } else {
        Err(format!(
            "{}; stderr: {}",
            report.error.unwrap_or_default(),
            report.execution.stderr.trim()
        ))
    }
}
