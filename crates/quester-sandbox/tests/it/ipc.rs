//! What a network namespace does not cover: Unix sockets with a path (and abstract ones),
//! other socket families, io_uring, SysV IPC, the ptrace family, /dev/shm and the host's
//! /proc. Every submission here first removes the Python guard it would meet (a fresh
//! `_socket`, a real `ctypes`), so what is checked is the kernel layer behind it.

use std::io::ErrorKind;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};
use std::path::PathBuf;
use std::time::Instant;

use crate::common::{assert_in_time, assert_nothing_left, quick_limits, sandbox, unique};
use quester_sandbox::{Execution, Layers, Sandbox, Termination};

fn program(sb: &Sandbox, source: &str) -> Execution {
    let started = Instant::now();
    let execution = sb.run_python(source, b"").expect("run_python");
    assert_in_time(sb, started);
    assert_nothing_left(sb, &execution);
    execution
}

fn root() -> bool {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Host-side Unix sockets a sandboxed program might reach: a datagram socket and a listening
/// stream socket on paths in the temp dir (mode 0777, so any uid may connect), and the same
/// two as abstract sockets. All non-blocking: the checks after a run never wait.
struct HostSockets {
    dgram_path: PathBuf,
    stream_path: PathBuf,
    abstract_dgram: String,
    abstract_stream: String,
    dgram: UnixDatagram,
    stream: UnixListener,
    abstract_dgram_socket: UnixDatagram,
    abstract_stream_socket: UnixListener,
}

impl HostSockets {
    fn new() -> HostSockets {
        let dir = std::env::temp_dir();
        let dgram_path = dir.join(format!("{}.sock", unique("dgram")));
        let stream_path = dir.join(format!("{}.sock", unique("stream")));
        let dgram = UnixDatagram::bind(&dgram_path).expect("bind the datagram socket");
        let stream = UnixListener::bind(&stream_path).expect("bind the stream socket");
        for p in [&dgram_path, &stream_path] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let abstract_dgram = unique("abstract-dgram");
        let abstract_stream = unique("abstract-stream");
        let abstract_dgram_socket = UnixDatagram::bind_addr(
            &SocketAddr::from_abstract_name(abstract_dgram.as_bytes()).unwrap(),
        )
        .expect("bind the abstract datagram socket");
        let abstract_stream_socket = UnixListener::bind_addr(
            &SocketAddr::from_abstract_name(abstract_stream.as_bytes()).unwrap(),
        )
        .expect("bind the abstract stream socket");
        for s in [&dgram, &abstract_dgram_socket] {
            s.set_nonblocking(true).unwrap();
        }
        for s in [&stream, &abstract_stream_socket] {
            s.set_nonblocking(true).unwrap();
        }
        HostSockets {
            dgram_path,
            stream_path,
            abstract_dgram,
            abstract_stream,
            dgram,
            stream,
            abstract_dgram_socket,
            abstract_stream_socket,
        }
    }

    /// A program that drops the socket guard and sends to / connects to each socket in turn,
    /// printing `<name> ESCAPED` or `<name> refused <errno>` for each.
    fn escape_program(&self) -> String {
        let targets = [
            ("path-dgram", "SOCK_DGRAM", format!("{:?}", self.dgram_path)),
            (
                "path-stream",
                "SOCK_STREAM",
                format!("{:?}", self.stream_path),
            ),
            (
                "abstract-dgram",
                "SOCK_DGRAM",
                format!("'\\0{}'", self.abstract_dgram),
            ),
            (
                "abstract-stream",
                "SOCK_STREAM",
                format!("'\\0{}'", self.abstract_stream),
            ),
        ];
        let list: Vec<String> = targets
            .iter()
            .map(|(name, kind, addr)| format!("({name:?}, _socket.{kind}, {addr})"))
            .collect();
        format!(
            "import sys\n\
             for name in ('socket', '_socket'):\n    sys.modules.pop(name, None)\n\
             import _socket\n\
             for name, kind, addr in [{}]:\n    \
                 try:\n        \
                     s = _socket.socket(_socket.AF_UNIX, kind)\n        \
                     s.settimeout(2)\n        \
                     if kind == _socket.SOCK_STREAM:\n            \
                         s.connect(addr)\n            \
                         s.send(b'out of the sandbox')\n        \
                     else:\n            \
                         s.sendto(b'out of the sandbox', addr)\n        \
                     print(name, 'ESCAPED', flush=True)\n    \
                 except OSError as e:\n        \
                     print(name, 'refused', e.errno, flush=True)\n\
             try:\n    \
                 _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)\n    \
                 print('socketpair ESCAPED')\n\
             except OSError as e:\n    \
                 print('socketpair refused', e.errno)\n",
            list.join(", ")
        )
    }

    /// What reached each host socket since the last call (and takes it off the queue).
    fn received(&self) -> Vec<&'static str> {
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        for (name, s) in [
            ("path-dgram", &self.dgram),
            ("abstract-dgram", &self.abstract_dgram_socket),
        ] {
            match s.recv(&mut buf) {
                Ok(_) => got.push(name),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("{name}: {e}"),
            }
        }
        for (name, s) in [
            ("path-stream", &self.stream),
            ("abstract-stream", &self.abstract_stream_socket),
        ] {
            match s.accept() {
                Ok(_) => got.push(name),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("{name}: {e}"),
            }
        }
        got
    }
}

impl Drop for HostSockets {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.dgram_path);
        let _ = std::fs::remove_file(&self.stream_path);
    }
}

/// The layers of `Sandbox::new`, with the per-run uid on (where it works) or off (as root,
/// the sandboxed program then runs as uid 0).
fn both_uids() -> Vec<(&'static str, Sandbox)> {
    let mut out = vec![("default layers", sandbox())];
    if root() {
        let layers = Layers {
            uid_drop: false,
            ..Layers::default()
        };
        out.push((
            "as root",
            Sandbox::with_layers(quick_limits(), layers).expect("sandbox"),
        ));
    }
    out
}

#[test]
fn host_unix_sockets_are_out_of_reach() {
    let host = HostSockets::new();
    let source = host.escape_program();
    let seccomp_only = Layers {
        network_namespace: false,
        pid_namespace: false,
        ipc_namespace: false,
        uid_drop: false,
        landlock: false,
        seccomp: true,
    };
    let mut sandboxes = both_uids();
    sandboxes.push((
        "seccomp alone",
        Sandbox::with_layers(quick_limits(), seccomp_only).expect("sandbox"),
    ));
    for (what, sb) in sandboxes {
        if !sb.protections().seccomp {
            eprintln!(
                "skipped {what}: no seccomp layer here ({})",
                sb.protections()
            );
            continue;
        }
        let execution = program(&sb, &source);
        assert_eq!(
            execution.termination,
            Termination::Exited(0),
            "{what}: {execution:?}"
        );
        // socket(AF_UNIX, ...) itself fails with EPERM, for every target.
        for name in [
            "path-dgram",
            "path-stream",
            "abstract-dgram",
            "abstract-stream",
            "socketpair",
        ] {
            assert!(
                execution
                    .stdout
                    .contains(&format!("{name} refused {}", libc::EPERM)),
                "{what}: {name}: {execution:?}"
            );
        }
        assert!(
            !execution.stdout.contains("ESCAPED"),
            "{what}: {execution:?}"
        );
        assert_eq!(host.received(), Vec::<&str>::new(), "{what}");
    }
}

/// The fixture above works: without the seccomp layer (all the others on) a path socket of
/// the host is reachable, which is the hole the layer closes.
#[test]
fn without_seccomp_a_host_path_socket_is_reachable() {
    let host = HostSockets::new();
    let layers = Layers {
        seccomp: false,
        ..Layers::default()
    };
    let sb = Sandbox::with_layers(quick_limits(), layers).expect("sandbox");
    let execution = program(&sb, &host.escape_program());
    eprintln!("without seccomp: {}", execution.stdout);
    assert!(
        execution.stdout.contains("path-dgram ESCAPED"),
        "{execution:?}"
    );
    assert!(
        execution.stdout.contains("path-stream ESCAPED"),
        "{execution:?}"
    );
    let got = host.received();
    assert!(
        got.contains(&"path-dgram") && got.contains(&"path-stream"),
        "{got:?}"
    );
    // Abstract sockets live in the network namespace (and Landlock ABI 6+ scopes them).
    let p = sb.protections();
    if p.network_namespace || p.landlock_scopes {
        assert!(!got.contains(&"abstract-dgram"), "{got:?}");
        assert!(!got.contains(&"abstract-stream"), "{got:?}");
    }
}

/// The reproduction, through `run_tests` as the coding environment calls it.
#[test]
fn a_submission_cannot_send_to_a_host_socket() {
    let host = HostSockets::new();
    let setup = format!(
        "def f(n):\n    return n\n\
         import sys\n\
         sys.modules.pop('_socket')\n\
         import _socket\n\
         _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM).sendto(b'out of the sandbox', {:?})\n",
        host.dgram_path
    );
    let check = "def check(candidate):\n    assert candidate(1) == 1\n";
    for (what, sb) in both_uids() {
        if !sb.protections().seccomp {
            eprintln!("skipped {what}: no seccomp layer here");
            continue;
        }
        let started = Instant::now();
        let report = sb.run_tests(&setup, check, "f").expect("run_tests");
        assert_in_time(&sb, started);
        assert_nothing_left(&sb, &report.execution);
        let error = report.error.as_deref().unwrap_or("");
        assert!(error.contains("PermissionError"), "{what}: {report:?}");
        assert_eq!(host.received(), Vec::<&str>::new(), "{what}");
    }
}

/// Sockets of other families than IPv4 and IPv6 cannot be made: vsock (the hypervisor),
/// netlink, packet.
#[test]
fn other_socket_families_are_refused() {
    let source = "import sys\n\
        for name in ('socket', '_socket'):\n    sys.modules.pop(name, None)\n\
        import _socket\n\
        for family, kind in ((40, _socket.SOCK_STREAM), (16, _socket.SOCK_RAW), (17, _socket.SOCK_RAW)):\n    \
            try:\n        \
                _socket.socket(family, kind)\n        \
                print(family, 'MADE')\n    \
            except OSError as e:\n        \
                print(family, 'refused', e.errno)\n\
        _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM).close()\n\
        _socket.socket(_socket.AF_INET6, _socket.SOCK_DGRAM).close()\n\
        print('ip sockets can be made')\n";
    for (what, sb) in both_uids() {
        if !sb.protections().seccomp {
            continue;
        }
        let execution = program(&sb, source);
        assert_eq!(
            execution.stdout, "40 refused 1\n16 refused 1\n17 refused 1\nip sockets can be made\n",
            "{what}: {execution:?}"
        );
    }
}

/// A real ctypes past the guard, and a libc to make raw system calls with.
const CTYPES: &str = "import sys\n\
    for name in ('ctypes', '_ctypes'):\n    sys.modules.pop(name, None)\n\
    import ctypes\n\
    libc = ctypes.CDLL(None, use_errno=True)\n\
    libc.syscall.restype = ctypes.c_long\n\
    def call(name, *args):\n    \
        # Whole longs: syscall(2) is variadic, and a 7th argument goes on the stack.\n    \
        args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]\n    \
        r = getattr(libc, name)(*args)\n    \
        print(name, 'refused' if r == -1 else 'ok', ctypes.get_errno() if r == -1 else '', flush=True)\n";

#[test]
fn io_uring_the_ptrace_family_and_keyrings_are_refused() {
    let (nr_setup, nr_process_vm_readv, nr_pidfd_open, nr_pidfd_getfd, nr_ptrace, nr_keyctl) = (
        libc::SYS_io_uring_setup,
        libc::SYS_process_vm_readv,
        libc::SYS_pidfd_open,
        libc::SYS_pidfd_getfd,
        libc::SYS_ptrace,
        libc::SYS_keyctl,
    );
    let source = format!(
        "{CTYPES}\
         import os\n\
         params = ctypes.create_string_buffer(256)\n\
         call('syscall', {nr_setup}, 8, params)\n\
         buf = ctypes.create_string_buffer(8)\n\
         iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)\n\
         call('syscall', {nr_process_vm_readv}, os.getpid(), iov, 1, iov, 1, 0)\n\
         pidfd = libc.syscall({nr_pidfd_open}, os.getpid(), 0)\n\
         call('syscall', {nr_pidfd_getfd}, pidfd, 1, 0)\n\
         sys.modules.pop('posix', None)\n\
         import posix, time\n\
         child = posix.fork()\n\
         if child == 0:\n    \
             time.sleep(30)\n    \
             posix._exit(0)\n\
         call('syscall', {nr_ptrace}, 16, child, 0, 0)\n\
         posix.kill(child, 9)\n\
         call('syscall', {nr_keyctl}, 0, -4, 0)\n"
    );
    let expected = "syscall refused 1\n".repeat(5);
    for (what, sb) in both_uids() {
        if !sb.protections().seccomp {
            continue;
        }
        let execution = program(&sb, &source);
        assert_eq!(execution.stdout, expected, "{what}: {execution:?}");
    }
    // Without the filter the same calls work (inside the sandbox, on its own processes): the
    // test does check the layer. (keyctl, last, is left out: its answer depends on the uid.)
    let sb = Sandbox::with_layers(
        quick_limits(),
        Layers {
            seccomp: false,
            ..Layers::default()
        },
    )
    .expect("sandbox");
    let execution = program(&sb, &source);
    assert!(
        execution.stdout.starts_with("syscall ok"),
        "io_uring_setup without seccomp: {execution:?}"
    );
    assert!(
        execution
            .stdout
            .lines()
            .take(4)
            .all(|l| l.starts_with("syscall ok")),
        "{execution:?}"
    );
}

/// SysV shared memory, message queues and semaphores of the host and its POSIX message queues
/// (all mode 0666) are not visible: the IPC namespace has its own.
#[test]
fn host_sysv_ipc_is_out_of_reach() {
    let key = 0x5157_0000 | (std::process::id() & 0xFFFF) as i32;
    let mq_name = std::ffi::CString::new(format!("/{}", unique("mq"))).unwrap();
    // SAFETY: SysV and mqueue calls with constant arguments and a NUL-terminated name; the
    // objects are removed below.
    let (shm, msq, sem, mq) = unsafe {
        (
            libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o666),
            libc::msgget(key, libc::IPC_CREAT | 0o666),
            libc::semget(key, 1, libc::IPC_CREAT | 0o666),
            libc::mq_open(
                mq_name.as_ptr(),
                libc::O_CREAT | libc::O_RDWR,
                0o666 as libc::mode_t,
                std::ptr::null_mut::<libc::mq_attr>(),
            ),
        )
    };
    assert!(
        shm >= 0 && msq >= 0 && sem >= 0 && mq >= 0,
        "shmget {shm}, msgget {msq}, semget {sem}, mq_open {mq}"
    );
    // mq_open's mode went through the umask. (The sandbox opens it read-only: Landlock would
    // refuse a write open anyway; reading, i.e. taking the host's messages, it does not.)
    // SAFETY: fchmod on the queue descriptor just opened.
    assert_eq!(unsafe { libc::fchmod(mq, 0o666) }, 0);
    let source = format!(
        "{CTYPES}\
         libc.shmat.restype = ctypes.c_void_p\n\
         r = libc.shmat({shm}, None, 0)\n\
         print('shmat', 'refused' if r in (None, ctypes.c_void_p(-1).value) else 'ok', ctypes.get_errno())\n\
         call('msgget', {key}, 0)\n\
         call('semget', {key}, 0, 0)\n\
         call('mq_open', b{mq:?}, 0)\n",
        mq = mq_name.to_str().unwrap(),
    );
    let run = |layers: Layers| {
        let sb = Sandbox::with_layers(quick_limits(), layers).expect("sandbox");
        let on = sb.protections().ipc_namespace;
        (on, program(&sb, &source))
    };
    let mut results = Vec::new();
    results.push(("default layers", run(Layers::default())));
    if root() {
        results.push((
            "as root",
            run(Layers {
                uid_drop: false,
                ..Layers::default()
            }),
        ));
    }
    let control = run(Layers {
        ipc_namespace: false,
        ..Layers::default()
    });
    // SAFETY: removing the ids made above.
    unsafe {
        libc::shmctl(shm, libc::IPC_RMID, std::ptr::null_mut());
        libc::msgctl(msq, libc::IPC_RMID, std::ptr::null_mut());
        libc::semctl(sem, 0, libc::IPC_RMID);
        libc::mq_close(mq);
        libc::mq_unlink(mq_name.as_ptr());
    }
    for (what, (on, execution)) in results {
        if !on {
            eprintln!("skipped {what}: no ipc namespace here");
            continue;
        }
        assert_eq!(
            execution.stdout,
            format!(
                "shmat refused {}\nmsgget refused {}\nsemget refused {}\nmq_open refused {}\n",
                libc::EINVAL,
                libc::ENOENT,
                libc::ENOENT,
                libc::ENOENT
            ),
            "{what}: {execution:?}"
        );
    }
    // Without it, the host's 0666 objects are there (the fixture is real).
    assert!(
        control.1.stdout.starts_with("shmat ok")
            && control.1.stdout.contains("msgget ok")
            && control.1.stdout.contains("semget ok")
            && control.1.stdout.contains("mq_open ok"),
        "{:?}",
        control.1
    );
}

/// /dev/shm (POSIX shared memory) takes no new file, and the host's processes are not in the
/// sandbox's /proc.
#[test]
fn dev_shm_and_host_proc_are_out_of_reach() {
    let name = unique("shm");
    let me = std::process::id();
    let source = format!(
        "import sys\n\
         sys.modules.pop('posix', None)\n\
         import posix\n\
         try:\n    \
             posix.open('/dev/shm/{name}', posix.O_WRONLY | posix.O_CREAT, 0o666)\n    \
             print('shm CREATED')\n\
         except OSError as e:\n    \
             print('shm refused', e.errno)\n\
         try:\n    \
             open('/proc/{me}/status').read()\n    \
             print('host proc VISIBLE')\n\
         except OSError as e:\n    \
             print('host proc refused', e.errno)\n"
    );
    for (what, sb) in both_uids() {
        let execution = program(&sb, &source);
        let p = sb.protections();
        if p.landlock_fs {
            assert!(
                execution
                    .stdout
                    .contains(&format!("shm refused {}", libc::EACCES)),
                "{what}: {execution:?}"
            );
        }
        if p.private_proc {
            assert!(
                execution
                    .stdout
                    .contains(&format!("host proc refused {}", libc::ENOENT)),
                "{what}: {execution:?}"
            );
        }
    }
    assert!(!PathBuf::from("/dev/shm").join(&name).exists());
}

/// UDP to a host port: the network namespace has only a loopback that is down.
#[test]
fn udp_to_the_host_is_out_of_reach() {
    let host = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp socket");
    host.set_nonblocking(true).unwrap();
    let port = host.local_addr().unwrap().port();
    let source = format!(
        "import sys\n\
         for name in ('socket', '_socket'):\n    sys.modules.pop(name, None)\n\
         import _socket\n\
         try:\n    \
             _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM).sendto(b'out', ('127.0.0.1', {port}))\n    \
             print('SENT')\n\
         except OSError as e:\n    \
             print('refused', e.errno)\n"
    );
    for (what, sb) in both_uids() {
        let execution = program(&sb, &source);
        let netns = sb.protections().network_namespace;
        if netns {
            assert_eq!(
                execution.stdout,
                format!("refused {}\n", libc::ENETUNREACH),
                "{what}: {execution:?}"
            );
        }
        let mut buf = [0u8; 16];
        match host.recv(&mut buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            other => assert!(!netns, "{what}: the host received {other:?}"),
        }
    }
}

/// A named pipe of the host (mode 0666, a reader waiting) cannot be opened for writing, and
/// neither can an existing file in /dev/shm: Landlock allows writes only in the run's
/// directory.
#[test]
fn host_fifos_and_shared_memory_files_take_no_writes() {
    use std::os::unix::fs::OpenOptionsExt;
    let fifo = std::env::temp_dir().join(unique("fifo"));
    let shm = PathBuf::from("/dev/shm").join(unique("shm-existing"));
    let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o666) }, 0);
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::write(&shm, b"host").unwrap();
    std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o666)).unwrap();
    // A reader, so that a writer's open would not fail with ENXIO for want of one.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .expect("fifo reader");
    let source = format!(
        "import sys\n\
         sys.modules.pop('posix', None)\n\
         import posix\n\
         for path in ({fifo:?}, {shm:?}):\n    \
             try:\n        \
                 fd = posix.open(path, posix.O_WRONLY | posix.O_NONBLOCK)\n        \
                 posix.write(fd, b'out of the sandbox')\n        \
                 print('WROTE')\n    \
             except OSError as e:\n        \
                 print('refused', e.errno)\n"
    );
    let mut results = Vec::new();
    for (what, sb) in both_uids() {
        let execution = program(&sb, &source);
        results.push((what, sb.protections().landlock_fs, execution));
    }
    let mut buf = [0u8; 64];
    let got = std::io::Read::read(&mut &reader, &mut buf);
    let shm_after = std::fs::read(&shm).unwrap();
    let _ = std::fs::remove_file(&fifo);
    let _ = std::fs::remove_file(&shm);
    for (what, landlock, execution) in results {
        if landlock {
            assert_eq!(
                execution.stdout,
                format!("refused {0}\nrefused {0}\n", libc::EACCES),
                "{what}: {execution:?}"
            );
        }
    }
    assert!(
        // No writer ever: EOF (0); a writer that went away without writing: the same.
        matches!(&got, Ok(0)) || matches!(&got, Err(e) if e.kind() == ErrorKind::WouldBlock),
        "the fifo got {got:?}"
    );
    assert_eq!(shm_after, b"host");
}

/// As root without the per-run uid the program would keep root's capabilities (and with them
/// the host's hostname, clock, rlimits, kernel modules); it has none, whatever the layers.
#[test]
fn no_capabilities_are_left() {
    let source = "import os\n\
        caps = [l.split() for l in open('/proc/self/status') if l.startswith('Cap')]\n\
        print(' '.join('%s=%d' % (k.rstrip(':'), int(v, 16)) for k, v in caps))\n\
        import sys\n\
        for name in ('ctypes', '_ctypes'):\n    sys.modules.pop(name, None)\n\
        import ctypes\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        name = os.uname().nodename.encode()\n\
        # The host's own name again: harmless even if it were allowed.\n\
        r = libc.sethostname(name, len(name))\n\
        print('sethostname', 'ALLOWED' if r == 0 else 'refused %d' % ctypes.get_errno())\n";
    let mut sandboxes = both_uids();
    sandboxes.push((
        "no optional layer",
        Sandbox::with_layers(
            quick_limits(),
            Layers {
                network_namespace: false,
                pid_namespace: false,
                ipc_namespace: false,
                uid_drop: false,
                landlock: false,
                seccomp: false,
            },
        )
        .expect("sandbox"),
    ));
    for (what, sb) in sandboxes {
        let execution = program(&sb, source);
        assert!(
            execution
                .stdout
                .starts_with("CapInh=0 CapPrm=0 CapEff=0 CapBnd="),
            "{what}: {execution:?}"
        );
        assert!(
            execution.stdout.contains("CapAmb=0\n"),
            "{what}: {execution:?}"
        );
        assert!(
            execution
                .stdout
                .contains(&format!("sethostname refused {}", libc::EPERM)),
            "{what}: {execution:?}"
        );
    }
}
