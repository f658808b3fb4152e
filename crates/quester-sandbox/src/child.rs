//! Starting the sandboxed interpreter, waiting for it with a wall-clock deadline, and killing
//! everything it started.

use std::ffi::{CString, OsStr};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::capture::{Capture, Captured};
use crate::{landlock, seccomp, SandboxError};

/// Open files per process: the interpreter needs a few dozen at most.
pub(crate) const MAX_OPEN_FILES: u64 = 64;
/// How long the output threads get to see the end of their pipes after the kill.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Mounts that make the interpreter reachable for a dropped uid when it lives under a
/// directory others cannot enter (pyenv under /root): a tmpfs over that directory with the
/// interpreter's folders bound back. Built once by the probe, used by every child.
#[derive(Debug)]
pub(crate) struct MountPlan {
    pub hides: Vec<CString>,
    pub dirs: Vec<CString>,
    /// Folders bound back into the tmpfs, each onto itself.
    pub binds: Vec<CString>,
    pub hidden: Vec<PathBuf>,
}

/// At most this many folders are bound back (the interpreter needs one or two).
const MAX_BINDS: usize = 8;

impl MountPlan {
    /// The plan for `needed` (absolute folders the interpreter reads), or Ok(None) when others
    /// can already reach all of them.
    pub(crate) fn for_paths(needed: &[PathBuf]) -> io::Result<Option<MountPlan>> {
        use std::os::unix::fs::PermissionsExt;
        let mut hides: Vec<PathBuf> = Vec::new();
        let mut targets: Vec<(PathBuf, PathBuf)> = Vec::new(); // (hide, target)
        for path in needed {
            let mut blocked = None;
            for ancestor in path.ancestors().collect::<Vec<_>>().into_iter().rev() {
                let mode = std::fs::metadata(ancestor)?.permissions().mode();
                if mode & 0o001 == 0 {
                    blocked = Some(ancestor.to_path_buf());
                    break;
                }
            }
            if let Some(hide) = blocked {
                if hide == Path::new("/") {
                    return Err(io::Error::other("/ is not searchable by others"));
                }
                if !hides.contains(&hide) {
                    hides.push(hide.clone());
                }
                targets.push((hide, path.clone()));
            }
        }
        if hides.is_empty() {
            return Ok(None);
        }
        // A folder inside another bound folder comes with it.
        let mut binds: Vec<(PathBuf, PathBuf)> = Vec::new();
        for (hide, target) in &targets {
            let covered = targets
                .iter()
                .any(|(_, other)| other != target && target.starts_with(other));
            if !covered && !binds.iter().any(|(_, t)| t == target) {
                binds.push((hide.clone(), target.clone()));
            }
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        for (hide, target) in &binds {
            let mut chain: Vec<PathBuf> = target
                .ancestors()
                .take_while(|a| a != hide)
                .map(Path::to_path_buf)
                .collect();
            chain.reverse();
            for d in chain {
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
        if binds.len() > MAX_BINDS {
            return Err(io::Error::other(
                "the interpreter needs too many folders bound",
            ));
        }
        Ok(Some(MountPlan {
            hides: hides
                .iter()
                .map(|p| cstring(p))
                .collect::<io::Result<_>>()?,
            dirs: dirs.iter().map(|p| cstring(p)).collect::<io::Result<_>>()?,
            binds: binds
                .iter()
                .map(|(_, t)| cstring(t))
                .collect::<io::Result<_>>()?,
            hidden: hides,
        }))
    }

    /// In the child, in its new (already private) mount namespace: async-signal-safe calls only.
    unsafe fn apply(&self) -> io::Result<()> {
        // SAFETY: libc calls on NUL-terminated strings this plan owns (CStrings built in the parent
        // before the clone) and on the fds opened just here; the caller is the cloned child
        // in its own mount namespace (this fn's contract), so the mounts reach nothing of
        // the host's.
        unsafe {
            let null = std::ptr::null::<libc::c_char>();
            // The folders to bind back, opened before the tmpfs hides them. Opened here, not in the
            // parent: a bind source must be a mount of this (new) namespace.
            let mut sources = [-1 as libc::c_int; MAX_BINDS];
            for (slot, target) in sources.iter_mut().zip(&self.binds) {
                *slot = libc::open(target.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                if *slot < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            for hide in &self.hides {
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    hide.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    c"mode=0755,size=1m".as_ptr().cast(),
                ))?;
            }
            for dir in &self.dirs {
                if libc::mkdir(dir.as_ptr(), 0o755) != 0
                    && *libc::__errno_location() != libc::EEXIST
                {
                    return Err(io::Error::last_os_error());
                }
            }
            for (fd, target) in sources.iter().zip(&self.binds) {
                let mut path = [0u8; 32];
                fd_path(*fd, &mut path);
                check(libc::mount(
                    path.as_ptr().cast(),
                    target.as_ptr(),
                    null,
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                libc::close(*fd);
            }
            Ok(())
        }
    }
}

/// Writes "/proc/self/fd/<fd>\0" into `out` without allocating.
fn fd_path(fd: libc::c_int, out: &mut [u8; 32]) {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    out[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 12];
    let mut n = fd.max(0) as u32;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[PREFIX.len() + i] = digits[len - 1 - i];
    }
    out[PREFIX.len() + len] = 0;
}

fn cstring(p: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other)
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Which kernel layers one child gets.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Isolation {
    /// Namespace flags for clone(2): CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWNS, and
    /// CLONE_NEWUSER where the caller is not root.
    pub namespaces: libc::c_int,
    /// Mount a /proc of the new pid namespace (needs CLONE_NEWNS and CLONE_NEWPID).
    pub private_proc: bool,
    pub mounts: Option<&'static MountPlan>,
    pub drop_uid: bool,
    pub landlock_abi: Option<u32>,
    /// The seccomp filter, installed last before exec.
    pub seccomp: Option<seccomp::Filter>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Rlimits {
    pub cpu_seconds: u64,
    pub memory_bytes: u64,
    pub max_processes: u64,
    pub max_file_bytes: u64,
}

pub(crate) struct Config<'a> {
    pub interpreter: &'a Path,
    pub args: &'a [&'a str],
    pub cwd: &'a Path,
    pub env: &'a [(&'a str, &'a OsStr)],
    pub stdin: Vec<u8>,
    pub wall: Duration,
    pub rlimits: Rlimits,
    pub isolation: Isolation,
    pub output_cap: usize,
    pub result_cap: usize,
}

pub(crate) struct Outcome {
    /// The raw wait status.
    pub status: libc::c_int,
    pub cpu: Duration,
    pub wall_killed: bool,
    pub elapsed: Duration,
    pub stdout: Captured,
    pub stderr: Captured,
    pub results: Captured,
    pub pid: u32,
    pub uid: Option<u32>,
}

/// Everything the child needs between clone and exec, prepared by the parent: nothing after
/// the clone may allocate or take a lock (another thread of the parent may have held it).
struct ChildPlan {
    path: CString,
    _argv: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    envp: Vec<*const libc::c_char>,
    cwd: CString,
    /// The child's ends of stdin, stdout, stderr and the result channel: they become fds 0-3.
    fds: [libc::c_int; 4],
    /// Where the child reports a failure before exec (4 bytes of errno).
    error_fd: libc::c_int,
    isolation: Isolation,
    uid: Option<u32>,
    rlimits: Rlimits,
    landlock_fd: libc::c_int,
}

impl ChildPlan {
    /// In the cloned child: async-signal-safe calls only. Returns only on failure.
    unsafe fn exec(&self) -> io::Error {
        // SAFETY: the caller is the cloned child (this fn's contract); path, argv and envp point
        // into CStrings and null-terminated pointer arrays that `self` keeps alive, as
        // execve needs.
        unsafe {
            match self.setup() {
                Ok(()) => {
                    libc::execve(self.path.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr());
                    io::Error::last_os_error()
                }
                Err(e) => e,
            }
        }
    }

    unsafe fn setup(&self) -> io::Result<()> {
        // SAFETY: the caller is the cloned child (this fn's contract), so the fd moves, signal
        // state, mounts, limits and uid change touch that process alone; every pointer
        // passed is a NUL-terminated CString of `self`, a local that outlives the call, or
        // null where the call takes null.
        unsafe {
            // Move the four ends (and the ruleset, which may sit on a low fd too) above the range
            // they go to, then into place (dup2 clears CLOEXEC).
            let landlock_fd = if self.landlock_fd >= 0 {
                let fd = libc::fcntl(self.landlock_fd, libc::F_DUPFD_CLOEXEC, 10);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                fd
            } else {
                -1
            };
            let mut high = [0; 4];
            for (h, fd) in high.iter_mut().zip(self.fds) {
                *h = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
                if *h < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            for (target, h) in high.into_iter().enumerate() {
                check(libc::dup2(h, target as libc::c_int))?;
            }
            // The parent's signal mask and ignored signals would survive exec.
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            // Its own session and process group, so the whole tree can be killed at once.
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if self.isolation.namespaces & libc::CLONE_NEWNS != 0 {
                let null = std::ptr::null::<libc::c_char>();
                // Private first, so nothing done here reaches the host's mount table.
                check(libc::mount(
                    null,
                    c"/".as_ptr(),
                    null,
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ))?;
                if self.isolation.private_proc {
                    check(libc::mount(
                        c"proc".as_ptr(),
                        c"/proc".as_ptr(),
                        c"proc".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        std::ptr::null(),
                    ))?;
                }
                if let Some(m) = self.isolation.mounts {
                    m.apply()?;
                }
            }
            check(libc::chdir(self.cwd.as_ptr()))?;
            let r = &self.rlimits;
            // soft == hard: SIGKILL at the limit (a pid namespace's init ignores SIGXCPU).
            set_rlimit(libc::RLIMIT_CPU, r.cpu_seconds, r.cpu_seconds)?;
            set_rlimit(libc::RLIMIT_AS, r.memory_bytes, r.memory_bytes)?;
            set_rlimit(libc::RLIMIT_NPROC, r.max_processes, r.max_processes)?;
            set_rlimit(libc::RLIMIT_FSIZE, r.max_file_bytes, r.max_file_bytes)?;
            set_rlimit(libc::RLIMIT_CORE, 0, 0)?;
            set_rlimit(libc::RLIMIT_NOFILE, MAX_OPEN_FILES, MAX_OPEN_FILES)?;
            if let Some(uid) = self.uid {
                // Raw syscalls: glibc's wrappers would try to sync the change across threads.
                check(
                    libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>())
                        as _,
                )?;
                check(libc::syscall(libc::SYS_setresgid, uid, uid, uid) as _)?;
                check(libc::syscall(libc::SYS_setresuid, uid, uid, uid) as _)?;
            }
            // No capabilities: as root without the per-run uid the program would otherwise keep
            // all of them (CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_SYS_TIME, CAP_SYS_RESOURCE, ...),
            // which no namespace here contains (sethostname, settimeofday, raising rlimits).
            // A uid change has already cleared them; lowering them never fails. With
            // PR_SET_NO_NEW_PRIVS below, exec cannot give them back, not even to uid 0.
            drop_capabilities()?;
            // No setuid binary can give privileges back; Landlock needs it too.
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            if landlock_fd >= 0 {
                check(libc::syscall(landlock::SYS_RESTRICT_SELF, landlock_fd, 0u32) as _)?;
            }
            // Last: the calls above (landlock_restrict_self among them) need not pass it.
            if let Some(filter) = self.isolation.seccomp {
                seccomp::install(filter)?;
            }
            // Whatever else the parent left inheritable closes at exec; the error pipe must stay
            // open until then. Old kernels lack close_range; nothing depends on it.
            libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 1u32 << 2);
            Ok(())
        }
    }
}

/// Empties the effective, permitted and inheritable sets (the ambient set follows), with a raw
/// capset(2): async-signal-safe.
unsafe fn drop_capabilities() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522; // two Data entries: capabilities 0-31 and 32-63
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data are live locals of the layout capset(2) reads for version 3.
    check(unsafe {
        libc::syscall(
            libc::SYS_capset,
            std::ptr::from_mut(&mut header),
            data.as_ptr(),
        )
    } as _)
}

/// Lowers a limit; never asks for more than the current hard limit, which a process without
/// privileges could not raise.
unsafe fn set_rlimit(resource: RlimitResource, soft: u64, hard: u64) -> io::Result<()> {
    // SAFETY: getrlimit and setrlimit get pointers to locals that outlive the calls.
    unsafe {
        let mut current = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        check(libc::getrlimit(resource, &mut current))?;
        let ceiling = current.rlim_max;
        let lim = libc::rlimit {
            rlim_cur: (soft as libc::rlim_t).min(ceiling),
            rlim_max: (hard as libc::rlim_t).min(ceiling),
        };
        check(libc::setrlimit(resource, &lim))
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type RlimitResource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type RlimitResource = libc::c_int;

/// Per-run uids: root's children each get a uid and gid of their own, so RLIMIT_NPROC counts
/// only that run's processes and one kill(-1) from that uid ends all of them.
struct UidSlots {
    used: Mutex<[bool; 256]>,
    freed: Condvar,
}

static UID_SLOTS: UidSlots = UidSlots {
    used: Mutex::new([false; 256]),
    freed: Condvar::new(),
};

struct UidLease {
    slot: usize,
    uid: u32,
}

impl UidLease {
    fn take() -> UidLease {
        let mut used = UID_SLOTS
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if let Some(slot) = used.iter().position(|u| !u) {
                used[slot] = true;
                // 0x4000_0000 | pid (22 bits) | slot (8 bits): unique on this machine while
                // the process lives, and far above any uid in a passwd file.
                let pid = std::process::id() & 0x3F_FFFF;
                let uid = 0x4000_0000 | (pid << 8) | slot as u32;
                return UidLease { slot, uid };
            }
            used = UID_SLOTS
                .freed
                .wait(used)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

impl Drop for UidLease {
    fn drop(&mut self) {
        let mut used = UID_SLOTS
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        used[self.slot] = false;
        UID_SLOTS.freed.notify_one();
    }
}

/// SIGKILL to every process running as `uid`: a helper becomes that uid and calls kill(-1),
/// which the kernel does in one pass, so a process that left the group (setsid) is caught too.
/// Only needed without a pid namespace.
fn kill_uid(uid: u32) {
    // SAFETY: the child makes raw syscalls only and leaves with _exit.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            if libc::syscall(libc::SYS_setresgid, uid, uid, uid) == 0
                && libc::syscall(libc::SYS_setresuid, uid, uid, uid) == 0
            {
                libc::kill(-1, libc::SIGKILL);
            }
            libc::_exit(0);
        }
        if pid > 0 {
            let mut status = 0;
            while libc::waitpid(pid, &mut status, 0) < 0 && *libc::__errno_location() == libc::EINTR
            {
            }
        }
    }
}

/// Kills the child's process group (and, without a pid namespace, its uid). The child must not
/// be reaped yet, so its pid, which is the group's id, cannot have been reused.
fn kill_all(pid: libc::pid_t, sweep_uid: Option<u32>) {
    // SAFETY: a plain syscall on a group id we own.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    if let Some(uid) = sweep_uid {
        kill_uid(uid);
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two fds.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 just returned these.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> SandboxError {
    move |e| SandboxError::Io {
        what,
        source: Arc::new(e),
    }
}

fn c_string(bytes: &[u8]) -> Result<CString, SandboxError> {
    CString::new(bytes).map_err(|e| SandboxError::Spawn(Arc::new(io::Error::other(e))))
}

/// Clones the child (in its new namespaces) and execs the interpreter; returns its pid once
/// exec has succeeded.
fn spawn(plan: &ChildPlan, error_read: OwnedFd, error_write: OwnedFd) -> io::Result<libc::pid_t> {
    let flags = libc::SIGCHLD as libc::c_ulong | plan.isolation.namespaces as libc::c_ulong;
    // SAFETY: fork-like clone (no new stack, no shared memory); the child runs only
    // async-signal-safe code from `plan`, which the parent keeps alive until after exec.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: we are the child; see above.
        unsafe {
            let err = plan.exec().raw_os_error().unwrap_or(libc::EINVAL);
            let bytes = err.to_ne_bytes();
            libc::write(plan.error_fd, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127);
        }
    }
    let pid = pid as libc::pid_t;
    // Only the child's copy of the write end is left: EOF means exec succeeded.
    drop(error_write);
    let mut buf = [0u8; 4];
    let mut got = 0;
    let mut file = std::fs::File::from(error_read);
    while got < 4 {
        match std::io::Read::read(&mut file, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if got == 0 {
        return Ok(pid);
    }
    // The child failed before exec: reap it and report why.
    let mut status = 0;
    // SAFETY: our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
    Err(io::Error::from_raw_os_error(i32::from_ne_bytes(buf)))
}

/// Runs the child to the end (or to the wall limit), kills whatever it left, and returns what
/// it wrote.
pub(crate) fn run(cfg: Config<'_>) -> Result<Outcome, SandboxError> {
    use std::os::unix::ffi::OsStrExt;
    let lease = cfg.isolation.drop_uid.then(UidLease::take);
    let uid = lease.as_ref().map(|l| l.uid);
    if let Some(uid) = uid {
        std::os::unix::fs::chown(cfg.cwd, Some(uid), Some(uid))
            .map_err(io_err("chown of the sandbox directory"))?;
    }
    let ruleset = match cfg.isolation.landlock_abi {
        Some(abi) => {
            Some(landlock::ruleset(abi, cfg.cwd).map_err(io_err("building the Landlock ruleset"))?)
        }
        None => None,
    };
    let pipes = || pipe().map_err(io_err("creating pipes"));
    let (stdin_r, stdin_w) = pipes()?;
    let (stdout_r, stdout_w) = pipes()?;
    let (stderr_r, stderr_w) = pipes()?;
    let (results_r, results_w) = pipes()?;
    let (error_r, error_w) = pipes()?;

    let path = c_string(cfg.interpreter.as_os_str().as_bytes())?;
    let mut argv_c = vec![path.clone()];
    for a in cfg.args {
        argv_c.push(c_string(a.as_bytes())?);
    }
    let mut envp_c = Vec::new();
    for (k, v) in cfg.env {
        let mut kv = k.as_bytes().to_vec();
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        envp_c.push(c_string(&kv)?);
    }
    let pointers = |v: &[CString]| {
        let mut p: Vec<*const libc::c_char> = v.iter().map(|c| c.as_ptr()).collect();
        p.push(std::ptr::null());
        p
    };
    let plan = ChildPlan {
        argv: pointers(&argv_c),
        envp: pointers(&envp_c),
        path,
        _argv: argv_c,
        _envp: envp_c,
        cwd: c_string(cfg.cwd.as_os_str().as_bytes())?,
        fds: [
            stdin_r.as_raw_fd(),
            stdout_w.as_raw_fd(),
            stderr_w.as_raw_fd(),
            results_w.as_raw_fd(),
        ],
        error_fd: error_w.as_raw_fd(),
        isolation: cfg.isolation,
        uid,
        rlimits: cfg.rlimits,
        landlock_fd: ruleset.as_ref().map_or(-1, std::os::fd::AsRawFd::as_raw_fd),
    };

    let start = Instant::now();
    let spawned = spawn(&plan, error_r, error_w);
    drop((stdin_r, stdout_w, stderr_w, results_w));
    drop(ruleset);
    let pid = spawned.map_err(|e| SandboxError::Spawn(Arc::new(e)))?;
    // Without a pid namespace nothing guarantees the kernel ends the tree with the child.
    let sweep_uid = if cfg.isolation.namespaces & libc::CLONE_NEWPID == 0 {
        uid
    } else {
        None
    };

    let stdout = Capture::spawn(std::fs::File::from(stdout_r), cfg.output_cap, "stdout");
    let stderr = Capture::spawn(std::fs::File::from(stderr_r), cfg.output_cap, "stderr");
    let results = Capture::spawn(std::fs::File::from(results_r), cfg.result_cap, "results");
    {
        let data = cfg.stdin;
        let mut stdin = std::fs::File::from(stdin_w);
        // A child that never reads must not block us: EPIPE ends the writer once it is gone.
        let _ = thread::Builder::new()
            .name("sandbox-stdin".into())
            .spawn(move || {
                let _ = stdin.write_all(&data);
            });
    }

    // Wait without reaping (WNOWAIT): the zombie keeps the pid and group id ours until the
    // whole group has been killed.
    let (tx, rx) = mpsc::channel();
    let waiter = thread::Builder::new()
        .name("sandbox-wait".into())
        .spawn(move || {
            // SAFETY: siginfo is plain data filled by the kernel.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            loop {
                // SAFETY: `info` is a live, writable siginfo_t for the kernel to fill; `pid` is
                // our child, not reaped (WNOWAIT), so the id cannot have been reused.
                let r = unsafe {
                    libc::waitid(
                        libc::P_PID,
                        pid as libc::id_t,
                        &mut info,
                        libc::WEXITED | libc::WNOWAIT,
                    )
                };
                if r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    break;
                }
            }
            let _ = tx.send(Instant::now());
        });
    let mut wall_killed = false;
    let ended = match waiter {
        Ok(_) => match rx.recv_timeout(cfg.wall) {
            Ok(t) => t,
            Err(_) => {
                wall_killed = true;
                kill_all(pid, sweep_uid);
                rx.recv().unwrap_or_else(|_| Instant::now())
            }
        },
        Err(_) => {
            // No thread to wait in: kill at once rather than risk waiting forever.
            wall_killed = true;
            kill_all(pid, sweep_uid);
            Instant::now()
        }
    };
    kill_all(pid, sweep_uid);
    let mut status = 0;
    // SAFETY: rusage is plain data filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are live locals for the kernel to fill; `pid` is our
        // child, reaped only here.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    drop(plan);
    let cpu = timeval(usage.ru_utime) + timeval(usage.ru_stime);
    let deadline = Instant::now() + DRAIN_GRACE;
    let outcome = Outcome {
        status,
        cpu,
        wall_killed,
        elapsed: ended.duration_since(start),
        stdout: stdout.finish(deadline),
        stderr: stderr.finish(deadline),
        results: results.finish(deadline),
        pid: pid as u32,
        uid,
    };
    drop(lease);
    Ok(outcome)
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_paths_are_formatted_without_allocation() {
        for (fd, want) in [
            (0, "/proc/self/fd/0"),
            (7, "/proc/self/fd/7"),
            (1234, "/proc/self/fd/1234"),
        ] {
            let mut out = [0u8; 32];
            fd_path(fd, &mut out);
            let end = out.iter().position(|b| *b == 0).unwrap();
            assert_eq!(std::str::from_utf8(&out[..end]).unwrap(), want);
        }
    }
}
