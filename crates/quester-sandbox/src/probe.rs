//! Finding python3 and finding out, once per process, which kernel layers work here.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde::Serialize;

use crate::child::{self, Isolation, MountPlan};
use crate::{landlock, seccomp, Limits, SandboxError};

/// Which protection layers a `Sandbox` uses (see docs/sandbox.md for what each one does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protections {
    /// The interpreter every run executes.
    pub interpreter: PathBuf,
    pub python_version: String,
    /// Own session and process group, the whole group SIGKILLed at the wall limit and at the end.
    pub process_group: bool,
    /// RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CORE = 0, RLIMIT_NOFILE.
    pub rlimits: bool,
    /// A new network namespace (only a down loopback inside).
    pub network_namespace: bool,
    /// A new pid namespace with the interpreter as its init: when it dies the kernel kills and
    /// reaps everything it started, wherever that went (setsid included).
    pub pid_namespace: bool,
    /// A /proc of that pid namespace: the sandbox sees only its own processes.
    pub private_proc: bool,
    /// A new IPC namespace: the host's SysV shared memory, semaphores and message queues and
    /// its POSIX message queues are out of reach.
    pub ipc_namespace: bool,
    /// The namespaces sit in a new user namespace (how a non-root caller gets them).
    pub user_namespace: bool,
    /// Root only: every run as a uid and gid of its own (so RLIMIT_NPROC and file permissions
    /// apply, and one kill from that uid ends everything the run started).
    pub uid_drop: bool,
    /// A private mount namespace that hides the folder keeping the interpreter from the dropped
    /// uid (e.g. /root for pyenv) behind a tmpfs, with only the interpreter's folders bound back.
    pub private_mounts: bool,
    /// The kernel's Landlock ABI, where Landlock is used.
    pub landlock_abi: Option<u32>,
    /// Landlock: writes only in the run's directory (and /dev/null).
    pub landlock_fs: bool,
    /// Landlock ABI 4+: no TCP bind or connect.
    pub landlock_net: bool,
    /// Landlock ABI 6+: signals and abstract unix sockets scoped to the sandbox.
    pub landlock_scopes: bool,
    /// A seccomp filter: socket(2) and socketpair(2) only for AF_INET and AF_INET6 (no Unix
    /// socket, path or abstract, no vsock, netlink or packet socket), no io_uring, no ptrace,
    /// process_vm_readv/writev or pidfd_getfd, no keyrings; each fails with EPERM.
    pub seccomp: bool,
    /// The harness's Python-level guards (fork, exec, kill, sockets, ctypes, writes outside).
    pub python_guards: bool,
    /// Why a layer is off.
    pub notes: Vec<String>,
}

impl fmt::Display for Protections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut on: Vec<String> = vec!["process group kill".into(), "rlimits".into()];
        if self.network_namespace {
            on.push("network namespace".into());
        }
        if self.pid_namespace {
            on.push(if self.private_proc {
                "pid namespace (private /proc)".into()
            } else {
                "pid namespace".into()
            });
        }
        if self.ipc_namespace {
            on.push("ipc namespace".into());
        }
        if self.user_namespace {
            on.push("user namespace".into());
        }
        if self.uid_drop {
            on.push(if self.private_mounts {
                "per-run uid (private mounts)".into()
            } else {
                "per-run uid".into()
            });
        }
        if let (true, Some(abi)) = (self.landlock_fs, self.landlock_abi) {
            let mut what = vec!["fs writes"];
            if self.landlock_net {
                what.push("tcp");
            }
            if self.landlock_scopes {
                what.push("signals, abstract sockets");
            }
            on.push(format!("landlock v{abi} ({})", what.join(", ")));
        }
        if self.seccomp {
            on.push("seccomp (ip sockets only, no io_uring, ptrace, keyrings)".into());
        }
        if self.python_guards {
            on.push("python guards".into());
        }
        write!(
            f,
            "python {} at {}; on: {}",
            self.python_version,
            self.interpreter.display(),
            on.join(", ")
        )?;
        if !self.notes.is_empty() {
            write!(f, "; off: {}", self.notes.join("; "))?;
        }
        Ok(())
    }
}

/// The layers a caller wants; each is used only where the probe found that it works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Layers {
    pub network_namespace: bool,
    pub pid_namespace: bool,
    pub ipc_namespace: bool,
    pub uid_drop: bool,
    pub landlock: bool,
    pub seccomp: bool,
}

impl Default for Layers {
    fn default() -> Self {
        Layers {
            network_namespace: true,
            pid_namespace: true,
            ipc_namespace: true,
            uid_drop: true,
            landlock: true,
            seccomp: true,
        }
    }
}

/// What the machine allows, found once.
#[derive(Debug)]
pub(crate) struct Probe {
    pub interpreter: PathBuf,
    pub version: String,
    /// The harness compiled by this interpreter (marshal format).
    pub harness: Vec<u8>,
    pub root: bool,
    pub netns: bool,
    pub pidns: bool,
    pub private_proc: bool,
    pub ipcns: bool,
    pub uid_drop: bool,
    pub mounts: Option<&'static MountPlan>,
    pub landlock_abi: Option<u32>,
    pub seccomp: Option<seccomp::Filter>,
    pub notes: Vec<String>,
}

/// Namespaces for a non-root caller need a user namespace to own them.
fn with_user_ns(root: bool, flags: libc::c_int) -> libc::c_int {
    if root || flags == 0 {
        flags
    } else {
        flags | libc::CLONE_NEWUSER
    }
}

impl Probe {
    pub(crate) fn isolation(&self, layers: Layers) -> Isolation {
        let drop_uid = self.uid_drop && layers.uid_drop;
        let mounts = if drop_uid { self.mounts } else { None };
        let mut ns = 0;
        if self.netns && layers.network_namespace {
            ns |= libc::CLONE_NEWNET;
        }
        let pid = self.pidns && layers.pid_namespace;
        if pid {
            ns |= libc::CLONE_NEWPID;
        }
        if self.ipcns && layers.ipc_namespace {
            ns |= libc::CLONE_NEWIPC;
        }
        let private_proc = pid && self.private_proc;
        if mounts.is_some() || private_proc {
            ns |= libc::CLONE_NEWNS;
        }
        Isolation {
            namespaces: with_user_ns(self.root, ns),
            private_proc,
            mounts,
            drop_uid,
            landlock_abi: if layers.landlock {
                self.landlock_abi
            } else {
                None
            },
            seccomp: if layers.seccomp { self.seccomp } else { None },
        }
    }

    pub(crate) fn protections(&self, layers: Layers) -> Protections {
        let iso = self.isolation(layers);
        let cover = iso.landlock_abi.map(landlock::coverage);
        let mut notes = self.notes.clone();
        let unrequested = [
            (layers.network_namespace, self.netns, "network namespace"),
            (layers.pid_namespace, self.pidns, "pid namespace"),
            (layers.ipc_namespace, self.ipcns, "ipc namespace"),
            (layers.uid_drop, self.uid_drop, "uid drop"),
            (layers.landlock, self.landlock_abi.is_some(), "landlock"),
            (layers.seccomp, self.seccomp.is_some(), "seccomp"),
        ];
        for (wanted, works, name) in unrequested {
            if works && !wanted {
                notes.push(format!("{name}: not requested"));
            }
        }
        Protections {
            interpreter: self.interpreter.clone(),
            python_version: self.version.clone(),
            process_group: true,
            rlimits: true,
            network_namespace: iso.namespaces & libc::CLONE_NEWNET != 0,
            pid_namespace: iso.namespaces & libc::CLONE_NEWPID != 0,
            private_proc: iso.private_proc,
            ipc_namespace: iso.namespaces & libc::CLONE_NEWIPC != 0,
            user_namespace: iso.namespaces & libc::CLONE_NEWUSER != 0,
            uid_drop: iso.drop_uid,
            private_mounts: iso.mounts.is_some(),
            landlock_abi: iso.landlock_abi,
            landlock_fs: iso.landlock_abi.is_some(),
            landlock_net: cover.as_ref().is_some_and(|c| c.net),
            landlock_scopes: cover.as_ref().is_some_and(|c| c.scopes),
            seccomp: iso.seccomp.is_some(),
            python_guards: true,
            notes,
        }
    }
}

static PROBE: OnceLock<Result<Probe, SandboxError>> = OnceLock::new();

pub(crate) fn probe() -> Result<&'static Probe, SandboxError> {
    PROBE.get_or_init(detect).as_ref().map_err(Clone::clone)
}

fn find_python() -> Result<PathBuf, SandboxError> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("python3");
        if let Ok(meta) = std::fs::metadata(&candidate) {
            if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                return Ok(candidate);
            }
        }
    }
    Err(SandboxError::PythonNotFound {
        path: path.to_string_lossy().into_owned(),
    })
}

/// The real interpreter behind `python3` (which may be a pyenv shim) and its folders.
fn describe(found: &Path) -> Result<(PathBuf, String, Vec<PathBuf>), SandboxError> {
    const SCRIPT: &str = "import sys\n\
        print(sys.executable)\n\
        print('%d.%d.%d' % sys.version_info[:3])\n\
        print(sys.version_info >= (3, 8))\n\
        for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):\n    print(p)\n";
    let unusable = |detail: String| SandboxError::PythonUnusable {
        interpreter: found.to_path_buf(),
        detail,
    };
    let out = Command::new(found)
        .args(["-I", "-S", "-c", SCRIPT])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| unusable(format!("cannot start it: {e}")))?;
    if !out.status.success() {
        return Err(unusable(format!(
            "it exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() < 7 {
        return Err(unusable(format!("unexpected answer {text:?}")));
    }
    if lines[2] != "True" {
        return Err(unusable(format!(
            "Python {} is too old (3.8 or newer needed)",
            lines[1]
        )));
    }
    let exe = if lines[0].is_empty() {
        found.to_path_buf()
    } else {
        PathBuf::from(lines[0])
    };
    let mut folders: Vec<PathBuf> = Vec::new();
    let real = std::fs::canonicalize(&exe).unwrap_or_else(|_| exe.clone());
    for p in real
        .parent()
        .into_iter()
        .chain(lines[3..7].iter().map(Path::new))
    {
        let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if !folders.contains(&p) {
            folders.push(p);
        }
    }
    Ok((exe, lines[1].to_string(), folders))
}

/// The harness as a marshalled code object, compiled by the interpreter that will run it.
fn compile_harness(interpreter: &Path) -> Result<Vec<u8>, SandboxError> {
    use std::io::Write;
    const COMPILE: &str = "import marshal, sys\n\
        code = compile(sys.stdin.buffer.read(), '<harness>', 'exec')\n\
        sys.stdout.buffer.write(marshal.dumps(code))\n";
    let unusable = |detail: String| SandboxError::PythonUnusable {
        interpreter: interpreter.to_path_buf(),
        detail,
    };
    let mut child = Command::new(interpreter)
        .args(["-I", "-S", "-B", "-c", COMPILE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| unusable(format!("cannot start it: {e}")))?;
    // The harness (~20 KB) fits in the pipe, and the interpreter reads it all before writing.
    let written = child
        .stdin
        .take()
        .expect("piped")
        .write_all(crate::HARNESS.as_bytes());
    let out = child
        .wait_with_output()
        .map_err(|e| unusable(format!("compiling the harness: {e}")))?;
    if written.is_err() || !out.status.success() || out.stdout.is_empty() {
        return Err(unusable(format!(
            "it cannot compile the harness: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

fn probe_limits() -> Limits {
    Limits {
        wall: Duration::from_secs(20),
        ..Limits::default()
    }
}

/// Runs `code` with `iso`; Ok when it exits 0.
fn try_code(interpreter: &Path, iso: Isolation, code: &str) -> Result<(), String> {
    let dir = tempfile::Builder::new()
        .prefix("quester-sandbox-probe-")
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))?;
    let env = crate::child_env(dir.path());
    let env_refs: Vec<(&str, &std::ffi::OsStr)> =
        env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let limits = probe_limits();
    let outcome = child::run(child::Config {
        interpreter,
        args: &["-I", "-S", "-B", "-c", code],
        cwd: dir.path(),
        env: &env_refs,
        stdin: Vec::new(),
        wall: limits.wall,
        rlimits: crate::rlimits(&limits),
        isolation: iso,
        output_cap: 4096,
        result_cap: 4096,
    })
    .map_err(|e| error_chain(&e))?;
    crate::remove_tree(dir);
    if libc::WIFEXITED(outcome.status) && libc::WEXITSTATUS(outcome.status) == 0 {
        Ok(())
    } else {
        let err = outcome.stderr.text();
        let last = err.lines().last().unwrap_or("").trim().to_string();
        Err(format!(
            "probe failed (status {:#x}) {last}",
            outcome.status
        ))
    }
}

pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(inner) = cur {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        cur = inner.source();
    }
    s
}

fn detect() -> Result<Probe, SandboxError> {
    let found = find_python()?;
    let (interpreter, version, folders) = describe(&found)?;
    let harness = compile_harness(&interpreter)?;
    let mut notes = Vec::new();

    // The bare interpreter under rlimits alone must work, or nothing will.
    try_code(
        &interpreter,
        Isolation::default(),
        "import ast, json, signal",
    )
    .map_err(|detail| SandboxError::PythonUnusable {
        interpreter: interpreter.clone(),
        detail: format!("it does not start under the sandbox's rlimits: {detail}"),
    })?;

    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let ns = |flags| with_user_ns(root, flags);

    const ONLY_LOOPBACK: &str = "import sys\n\
        rows = open('/proc/self/net/dev').read().splitlines()[2:]\n\
        names = [r.split(':')[0].strip() for r in rows if r.strip()]\n\
        sys.exit(0 if names == ['lo'] else 5)\n";
    let netns = match try_code(
        &interpreter,
        Isolation {
            namespaces: ns(libc::CLONE_NEWNET),
            ..Isolation::default()
        },
        ONLY_LOOPBACK,
    ) {
        Ok(()) => true,
        Err(e) => {
            notes.push(format!("network namespace: {e}"));
            false
        }
    };

    const ALONE: &str = "import os, sys\n\
        pids = [p for p in os.listdir('/proc') if p.isdigit()]\n\
        sys.exit(0 if os.getpid() == 1 and pids == ['1'] else 5)\n";
    const INIT: &str = "import os, sys\nsys.exit(0 if os.getpid() == 1 else 5)\n";
    let with_proc = Isolation {
        namespaces: ns(libc::CLONE_NEWPID | libc::CLONE_NEWNS),
        private_proc: true,
        ..Isolation::default()
    };
    let (pidns, private_proc) = match try_code(&interpreter, with_proc, ALONE) {
        Ok(()) => (true, true),
        Err(e1) => {
            let bare = Isolation {
                namespaces: ns(libc::CLONE_NEWPID),
                ..Isolation::default()
            };
            match try_code(&interpreter, bare, INIT) {
                Ok(()) => {
                    notes.push(format!("private /proc: {e1}"));
                    (true, false)
                }
                Err(e2) => {
                    notes.push(format!("pid namespace: {e2}"));
                    (false, false)
                }
            }
        }
    };

    let mut mounts = None;
    let mut uid_drop = false;
    if root {
        match MountPlan::for_paths(&folders) {
            Ok(plan) => {
                let tmp = std::fs::canonicalize(std::env::temp_dir()).unwrap_or_default();
                match plan {
                    Some(p) if p.hidden.iter().any(|h| tmp.starts_with(h)) => notes.push(format!(
                        "uid drop: the temp dir {} is inside {}, which the dropped uid cannot enter",
                        tmp.display(),
                        p.hidden[0].display()
                    )),
                    plan => {
                        // Leaked on purpose: every child of the process uses it, so it lives as
                        // long as the process.
                        mounts = plan.map(|p| &*Box::leak(Box::new(p)));
                        let iso = Isolation {
                            namespaces: if mounts.is_some() { libc::CLONE_NEWNS } else { 0 },
                            mounts,
                            drop_uid: true,
                            ..Isolation::default()
                        };
                        const UNPRIVILEGED: &str = "import os, sys, ast, json, signal\n\
                            open('probe.txt', 'w').write('x')\n\
                            sys.exit(0 if os.getuid() != 0 and os.geteuid() != 0 else 5)\n";
                        match try_code(&interpreter, iso, UNPRIVILEGED) {
                            Ok(()) => uid_drop = true,
                            Err(e) => {
                                notes.push(format!("uid drop: {e}"));
                                mounts = None;
                            }
                        }
                    }
                }
            }
            Err(e) => notes.push(format!("uid drop: cannot plan the mounts: {e}")),
        }
    } else {
        notes.push("uid drop: not running as root".into());
    }

    let mut landlock_abi = landlock::abi_version();
    if let Some(abi) = landlock_abi {
        let marker = std::env::temp_dir().join(format!(
            "quester-landlock-probe-{}-{}",
            std::process::id(),
            crate::nonce()
        ));
        let code = format!(
            "import sys\nopen('inside.txt', 'w').write('x')\ntry:\n    open({:?}, 'w')\nexcept PermissionError:\n    sys.exit(0)\nsys.exit(5)\n",
            marker.to_string_lossy()
        );
        let iso = Isolation {
            landlock_abi: Some(abi),
            ..Isolation::default()
        };
        if let Err(e) = try_code(&interpreter, iso, &code) {
            notes.push(format!("landlock: {e}"));
            landlock_abi = None;
        }
        let _ = std::fs::remove_file(&marker);
    } else {
        notes.push("landlock: not offered by this kernel".into());
    }

    // The IPC namespace: the child's own differs from ours.
    let ipcns = match std::fs::read_link("/proc/self/ns/ipc") {
        Ok(host) => {
            let code = format!(
                "import os, sys\nsys.exit(0 if os.readlink('/proc/self/ns/ipc') != {:?} else 5)\n",
                host.to_string_lossy()
            );
            let iso = Isolation {
                namespaces: ns(libc::CLONE_NEWIPC),
                ..Isolation::default()
            };
            match try_code(&interpreter, iso, &code) {
                Ok(()) => true,
                Err(e) => {
                    notes.push(format!("ipc namespace: {e}"));
                    false
                }
            }
        }
        Err(e) => {
            notes.push(format!("ipc namespace: cannot read /proc/self/ns/ipc: {e}"));
            false
        }
    };

    // The seccomp filter: a Unix socket is refused with EPERM, an IPv4 one is not.
    let mut seccomp = seccomp::program();
    if let Some(filter) = seccomp {
        const REFUSED: &str = "import _socket, sys\n\
            try:\n    _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)\n\
            except PermissionError:\n    pass\n\
            else:\n    sys.exit(5)\n\
            _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM).close()\n";
        let iso = Isolation {
            seccomp: Some(filter),
            ..Isolation::default()
        };
        if let Err(e) = try_code(&interpreter, iso, REFUSED) {
            notes.push(format!("seccomp: {e}"));
            seccomp = None;
        }
    } else {
        notes.push("seccomp: no filter for this architecture".into());
    }

    let mut probe = Probe {
        interpreter,
        version,
        harness,
        root,
        netns,
        pidns,
        private_proc,
        ipcns,
        uid_drop,
        mounts,
        landlock_abi,
        seccomp,
        notes,
    };
    // All the layers that work alone, together, through the real harness; where that fails,
    // layers go one at a time, the most intricate first.
    loop {
        let iso = probe.isolation(Layers::default());
        let Err(e) = crate::smoke_test(&probe.interpreter, &probe.harness, iso) else {
            break;
        };
        if probe.landlock_abi.take().is_some() {
            probe
                .notes
                .push(format!("landlock: fails with the other layers: {e}"));
        } else if probe.seccomp.take().is_some() {
            probe
                .notes
                .push(format!("seccomp: fails with the other layers: {e}"));
        } else if probe.uid_drop {
            probe.uid_drop = false;
            probe.mounts = None;
            probe
                .notes
                .push(format!("uid drop: fails with the other layers: {e}"));
        } else if probe.private_proc {
            probe.private_proc = false;
            probe
                .notes
                .push(format!("private /proc: fails with the other layers: {e}"));
        } else if probe.pidns {
            probe.pidns = false;
            probe
                .notes
                .push(format!("pid namespace: fails with the other layers: {e}"));
        } else if probe.ipcns {
            probe.ipcns = false;
            probe
                .notes
                .push(format!("ipc namespace: fails with the other layers: {e}"));
        } else if probe.netns {
            probe.netns = false;
            probe.notes.push(format!(
                "network namespace: fails with the other layers: {e}"
            ));
        } else {
            return Err(SandboxError::PythonUnusable {
                interpreter: probe.interpreter.clone(),
                detail: format!("the test harness does not run under it: {e}"),
            });
        }
    }
    Ok(probe)
}
