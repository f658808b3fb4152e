//! Hostile submissions: each one ends within the wall limit + 2 s as a failed outcome with a
//! readable message, and leaves no process of the run behind.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Instant;

use crate::common::{assert_in_time, assert_nothing_left, quick_limits, sandbox, unique};
use quester_sandbox::{Execution, Layers, Limits, Sandbox, Termination, TestReport};

const CHECK3: &str = "def check(candidate):\n    assert candidate(1) == 1\n    assert candidate(2) == 2\n    assert candidate(3) == 3\n";

fn tests_of(sb: &Sandbox, setup: &str, tests: &str) -> TestReport {
    let started = Instant::now();
    let report = sb.run_tests(setup, tests, "f").expect("run_tests");
    assert_in_time(sb, started);
    assert_nothing_left(sb, &report.execution);
    report
}

fn program(sb: &Sandbox, source: &str, stdin: &[u8]) -> Execution {
    let started = Instant::now();
    let execution = sb.run_python(source, stdin).expect("run_python");
    assert_in_time(sb, started);
    assert_nothing_left(sb, &execution);
    execution
}

fn error_of(report: &TestReport) -> &str {
    report.error.as_deref().unwrap_or("")
}

fn assert_all_not_run(report: &TestReport) {
    assert!(report.passed.is_empty(), "{report:?}");
    assert_eq!(report.failures.len(), report.total);
    for f in &report.failures {
        assert!(f.message.starts_with("not run: "), "{f:?}");
    }
}

#[test]
fn protections_are_reported() {
    let sb = sandbox();
    let p = sb.protections();
    assert!(p.process_group && p.rlimits && p.python_guards);
    let shown = p.to_string();
    assert!(shown.contains("python 3."), "{shown}");
    // Each layer that is off says why.
    let off = [
        p.network_namespace,
        p.pid_namespace,
        // SAFETY: geteuid takes no arguments and cannot fail.
        p.uid_drop || unsafe { libc::geteuid() } != 0,
        p.landlock_fs,
        p.ipc_namespace,
        p.seccomp,
    ]
    .iter()
    .filter(|on| !**on)
    .count();
    assert!(p.notes.len() >= off, "{p:?}");
}

#[test]
fn infinite_loop_at_top_level() {
    let sb = sandbox();
    let report = tests_of(&sb, "while True:\n    pass\n", CHECK3);
    assert_eq!(report.total, 3);
    assert!(!report.all_passed());
    assert!(
        matches!(
            report.execution.termination,
            Termination::CpuLimit | Termination::WallTimeout
        ),
        "{report:?}"
    );
    let error = error_of(&report);
    assert!(
        error.contains("CPU time limit") || error.contains("wall-clock limit"),
        "{error}"
    );
    assert_all_not_run(&report);

    let execution = program(&sb, "while True:\n    pass\n", b"");
    assert!(
        matches!(
            execution.termination,
            Termination::CpuLimit | Termination::WallTimeout
        ),
        "{execution:?}"
    );
}

#[test]
fn infinite_loop_in_the_function_fails_only_its_test() {
    let sb = sandbox();
    let report = tests_of(
        &sb,
        "def f(x):\n    while x == 2:\n        pass\n    return x\n",
        CHECK3,
    );
    assert_eq!(report.passed, vec![0, 2], "{report:?}");
    assert_eq!(report.failures.len(), 1);
    assert_eq!(report.failures[0].index, 1);
    assert_eq!(report.failures[0].source, "assert candidate(2) == 2");
    assert_eq!(report.failures[0].message, "timed out after 1 s");
    assert_eq!(report.error, None);
}

#[test]
fn a_loop_that_swallows_the_timeout_is_ended_by_the_limits_and_keeps_earlier_results() {
    let sb = sandbox();
    let setup = "def f(x):\n    while x == 2:\n        try:\n            while True:\n                pass\n        except BaseException:\n            pass\n    return x\n";
    let report = tests_of(&sb, setup, CHECK3);
    assert_eq!(report.passed, vec![0], "{report:?}");
    assert_eq!(report.failures.len(), 2);
    assert!(report.failures[0].message.starts_with("not run: "));
    assert!(report.error.is_some());
}

#[test]
fn sleeping_is_timed_out() {
    let sb = sandbox();
    let report = tests_of(
        &sb,
        "import time\ndef f(x):\n    if x == 2:\n        time.sleep(60)\n    return x\n",
        CHECK3,
    );
    assert_eq!(report.passed, vec![0, 2], "{report:?}");
    assert_eq!(report.failures[0].message, "timed out after 1 s");

    let execution = program(&sb, "import time\ntime.sleep(60)\n", b"");
    assert_eq!(execution.termination, Termination::WallTimeout);
    let report = tests_of(&sb, "import time\ntime.sleep(60)\n", CHECK3);
    assert_eq!(report.execution.termination, Termination::WallTimeout);
    assert_eq!(error_of(&report), "killed at the wall-clock limit (4 s)");
    assert_all_not_run(&report);
}

#[test]
fn fork_bombs_are_refused() {
    let sb = sandbox();
    let cases = [
        (
            "import os\nwhile True:\n    os.fork()\n",
            "os.fork is disabled",
        ),
        (
            "import ctypes\nlibc = ctypes.CDLL(None)\nwhile True:\n    libc.fork()\n",
            "ctypes",
        ),
        (
            "import os\nwhile True:\n    os.posix_spawn('/bin/sh', ['sh', '-c', 'sleep 30'], {})\n",
            "os.posix_spawn is disabled",
        ),
        (
            "import subprocess\nsubprocess.Popen(['sleep', '30'])\n",
            "subprocess is disabled",
        ),
        (
            "import multiprocessing\nmultiprocessing.Process(target=print).start()\n",
            "disabled",
        ),
    ];
    for (setup, expected) in cases {
        let report = tests_of(&sb, setup, CHECK3);
        assert!(error_of(&report).contains(expected), "{setup}: {report:?}");
        assert_all_not_run(&report);
    }
}

/// Python-level guards can be undone (a fresh `posix` module); then the kernel layers hold.
#[test]
fn a_fork_bomb_past_the_guards_is_bounded_and_cleaned_up() {
    let sb = sandbox();
    // SAFETY: geteuid takes no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    // As root without the uid drop RLIMIT_NPROC does not bind: keep the loop finite there.
    let bounded = root && !sb.protections().uid_drop;
    // Children that leave the process group are caught by the pid namespace or the uid kill.
    let p = sb.protections();
    let leave_group = if p.pid_namespace || p.uid_drop {
        "posix.setsid()"
    } else {
        "pass"
    };
    let source = format!(
        "import sys\n\
         sys.modules.pop('posix', None)\n\
         import posix, time\n\
         n = 0\n\
         try:\n    \
             for _ in range({}):\n        \
                 if posix.fork() == 0:\n            \
                     {leave_group}\n            \
                     time.sleep(30)\n            \
                     posix._exit(0)\n        \
                 n += 1\n\
         except OSError as e:\n    \
             print('stopped after', n, e.errno, flush=True)\n\
         time.sleep(30)\n",
        if bounded { 20 } else { 100_000 },
    );
    let execution = program(&sb, &source, b"");
    assert_eq!(execution.termination, Termination::WallTimeout);
    if !bounded {
        let line = execution.stdout.trim();
        let n: u64 = line
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no 'stopped after' line: {execution:?}"));
        assert!(n < quick_limits().max_processes, "{line}");
        assert!(line.ends_with(" 11"), "EAGAIN expected: {line}");
    }
}

#[test]
fn memory_hogs_hit_the_limit() {
    let sb = sandbox();
    let report = tests_of(&sb, "x = bytearray(10 * 2**30)\n", CHECK3);
    assert_eq!(report.execution.termination, Termination::MemoryLimit);
    assert!(error_of(&report).contains("MemoryError"), "{report:?}");
    assert_all_not_run(&report);

    let report = tests_of(
        &sb,
        "def f(x):\n    if x == 2:\n        return len(bytearray(10 * 2**30))\n    return x\n",
        CHECK3,
    );
    assert_eq!(report.passed, vec![0, 2], "{report:?}");
    assert_eq!(report.failures[0].message, "MemoryError");

    // Filling memory 64 MiB at a time takes seconds on a loaded 2-core machine: a roomier wall
    // and CPU limit, so the memory limit is what ends it.
    let roomy = Sandbox::new(Limits {
        wall: std::time::Duration::from_secs(30),
        cpu_seconds: 25,
        ..quick_limits()
    })
    .expect("sandbox");
    let execution = program(
        &roomy,
        "blocks = []\nwhile True:\n    blocks.append(bytearray(2**26))\n",
        b"",
    );
    assert_eq!(
        execution.termination,
        Termination::MemoryLimit,
        "{execution:?}"
    );
    assert!(execution.stderr.contains("MemoryError"));
}

#[test]
fn no_network() {
    let sb = sandbox();
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    let setup =
        format!("import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n");
    let report = tests_of(&sb, &setup, CHECK3);
    assert!(
        error_of(&report).contains("network access is disabled"),
        "{report:?}"
    );

    // Past the guard: a fresh _socket module.
    let source = format!(
        "import sys\n\
         for name in ('socket', '_socket'):\n    sys.modules.pop(name, None)\n\
         import _socket\n\
         try:\n    \
             s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)\n    \
             s.settimeout(2)\n    \
             s.connect(('127.0.0.1', {port}))\n    \
             print('CONNECTED')\n\
         except OSError as e:\n    \
             print('refused', e.errno)\n"
    );
    let execution = program(&sb, &source, b"");
    let p = sb.protections();
    if p.network_namespace || p.landlock_net {
        assert!(execution.stdout.starts_with("refused"), "{execution:?}");
    } else {
        // Only the Python guard stood in the way, and it was bypassed on purpose: this
        // machine offers no kernel layer against it (docs/sandbox.md says so).
        eprintln!("no network namespace and no Landlock TCP here: {p}");
    }
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the listener accepted something: {other:?}"),
    }
}

#[test]
fn writes_outside_the_directory_are_refused() {
    let sb = sandbox();
    let in_tmp = std::env::temp_dir().join(unique("tmp"));
    let in_crate = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(unique("crate"));
    let relative = format!("../{}", unique("rel"));
    let relative_target = std::env::temp_dir().join(relative.trim_start_matches("../"));
    for target in [
        in_tmp.to_str().unwrap(),
        in_crate.to_str().unwrap(),
        &relative,
    ] {
        let setup = format!("open({target:?}, 'w').write('x')\n");
        let report = tests_of(&sb, &setup, CHECK3);
        assert!(error_of(&report).contains("PermissionError"), "{report:?}");

        // Past the guard: the io module's own FileIO, and a fresh posix.open.
        let source = format!(
            "import sys\n\
             sys.modules.pop('posix', None)\n\
             import _io, posix\n\
             for attempt in (lambda: _io.FileIO({target:?}, 'w'),\n                \
                             lambda: posix.open({target:?}, posix.O_WRONLY | posix.O_CREAT)):\n    \
                 try:\n        \
                     attempt()\n        \
                     print('WROTE')\n    \
                 except OSError as e:\n        \
                     print('refused', e.errno)\n"
        );
        let execution = program(&sb, &source, b"");
        let layered = sb.protections().landlock_fs;
        if layered {
            assert_eq!(
                execution.stdout, "refused 13\nrefused 13\n",
                "{execution:?}"
            );
        }
    }
    for path in [&in_tmp, &in_crate, &relative_target] {
        assert!(!path.exists(), "{} was written", path.display());
    }
}

#[test]
fn megabytes_of_output_are_cut() {
    let sb = sandbox();
    let cap = sb.limits().max_output_bytes;
    let execution = program(
        &sb,
        "import sys\nchunk = 'x' * 65536\nfor _ in range(160):\n    sys.stdout.write(chunk)\n    sys.stderr.write(chunk)\n",
        b"",
    );
    assert_eq!(execution.termination, Termination::Exited(0));
    assert_eq!(execution.stdout.len(), cap);
    assert_eq!(execution.stderr.len(), cap);
    assert!(execution.stdout_truncated && execution.stderr_truncated);

    // Printing does not disturb the results.
    let report = tests_of(
        &sb,
        "for _ in range(3000):\n    print('y' * 1000)\ndef f(x):\n    return x\n",
        CHECK3,
    );
    assert!(report.all_passed(), "{report:?}");
    assert!(report.execution.stdout_truncated);
}

#[test]
fn non_utf8_output_is_decoded_lossily() {
    let sb = sandbox();
    let execution = program(
        &sb,
        "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe\\n')\nsys.stderr.buffer.write(b'\\xc3(')\n",
        b"",
    );
    assert_eq!(execution.stdout, "ok \u{fffd}\u{fffd}\n");
    assert_eq!(execution.stderr, "\u{fffd}(");
}

#[test]
fn stdin_is_at_eof() {
    let sb = sandbox();
    let source = "import sys\nprint(repr(sys.stdin.read()))\ntry:\n    input()\nexcept EOFError:\n    print('EOF')\n";
    let execution = program(&sb, source, b"");
    assert_eq!(execution.stdout, "''\nEOF\n");
    let execution = program(&sb, source, b"hello\nworld");
    assert_eq!(execution.stdout, "'hello\\nworld'\nEOF\n");
    assert!(execution.elapsed.as_secs() < 2);

    let report = tests_of(&sb, "data = input()\ndef f(x):\n    return x\n", CHECK3);
    assert!(error_of(&report).contains("EOFError"), "{report:?}");
}

#[test]
fn fake_result_lines_do_not_pass() {
    let sb = sandbox();
    // Lines shaped like the harness's, with made-up nonces, on stdout and on the result fd.
    let setup = "import os\n\
        for i in range(3):\n    \
            line = '%s {\"ev\": \"result\", \"i\": %d, \"ok\": true, \"msg\": \"\"}' % ('0' * 32, i)\n    \
            print(line)\n    \
            print('\\n' + line)\n    \
            try:\n        \
                os.write(3, ('\\n' + line + '\\n').encode())\n    \
            except OSError:\n        \
                pass\n\
        print('{\"ev\": \"done\"}')\n\
        def f(x):\n    \
            return -1\n";
    let report = tests_of(&sb, setup, CHECK3);
    assert!(report.passed.is_empty(), "{report:?}");
    assert_eq!(report.failures.len(), 3);
    assert!(report
        .failures
        .iter()
        .all(|f| f.message == "AssertionError"));
    assert!(!report.all_passed());

    // Forge, then leave before the harness can report anything.
    let setup = "import os, sys\n\
        os.write(3, b'\\n' + b'f' * 32 + b' {\"ev\": \"done\"}\\n')\n\
        sys.modules.pop('posix', None)\n\
        import posix\n\
        posix._exit(0)\n";
    let report = tests_of(&sb, setup, CHECK3);
    assert!(report.passed.is_empty());
    assert!(
        error_of(&report).contains("exited with code 0 before the tests finished"),
        "{report:?}"
    );
}

#[test]
fn exits_and_signals_are_contained() {
    let sb = sandbox();
    let report = tests_of(&sb, "import sys\nsys.exit(0)\n", CHECK3);
    assert!(error_of(&report).contains("SystemExit"), "{report:?}");

    let me = std::process::id();
    let source = format!(
        "import os, signal, sys\n\
         for attempt in (lambda: os.kill({me}, 0), lambda: signal.signal(signal.SIGALRM, signal.SIG_IGN),\n                \
                         lambda: signal.setitimer(signal.ITIMER_REAL, 0)):\n    \
             try:\n        \
                 attempt()\n        \
                 print('ALLOWED')\n    \
             except (OSError, PermissionError) as e:\n        \
                 print('refused')\n\
         sys.modules.pop('posix', None)\n\
         import posix\n\
         try:\n    \
             posix.kill({me}, 0)\n    \
             print('SIGNAL REACHES THE HOST')\n\
         except OSError as e:\n    \
             print('refused', e.errno)\n"
    );
    let execution = program(&sb, &source, b"");
    assert!(!execution.stdout.contains("ALLOWED"), "{execution:?}");
    let p = sb.protections();
    if p.pid_namespace || p.uid_drop || p.landlock_scopes {
        assert!(!execution.stdout.contains("REACHES"), "{execution:?}");
    }
}

/// With every optional layer off, the process group kill, the rlimits and the guards still
/// end what the submission starts.
#[test]
fn the_always_on_layers_alone_still_end_everything() {
    let layers = Layers {
        network_namespace: false,
        pid_namespace: false,
        ipc_namespace: false,
        uid_drop: false,
        landlock: false,
        seccomp: false,
    };
    let sb = Sandbox::with_layers(quick_limits(), layers).expect("sandbox");
    eprintln!("protections: {}", sb.protections());
    assert!(!sb.protections().pid_namespace && !sb.protections().uid_drop);

    let report = tests_of(&sb, "import time\ntime.sleep(60)\n", CHECK3);
    assert_eq!(report.execution.termination, Termination::WallTimeout);
    let report = tests_of(
        &sb,
        "def f(x):\n    while x == 2:\n        pass\n    return x\n",
        CHECK3,
    );
    assert_eq!(report.passed, vec![0, 2]);

    // A few sleeping children past the guards: the group kill takes them.
    let source = "import sys, time\n\
        sys.modules.pop('posix', None)\n\
        import posix\n\
        for _ in range(5):\n    \
            if posix.fork() == 0:\n        \
                time.sleep(30)\n        \
                posix._exit(0)\n\
        time.sleep(30)\n";
    let execution = program(&sb, source, b"");
    assert_eq!(execution.termination, Termination::WallTimeout);
}

/// Without the pid namespace, children that leave the process group (setsid) are still ended
/// by the kill from the run's own uid.
#[test]
fn without_a_pid_namespace_the_uid_kill_catches_what_left_the_group() {
    let layers = Layers {
        pid_namespace: false,
        ..Layers::default()
    };
    let sb = Sandbox::with_layers(quick_limits(), layers).expect("sandbox");
    if !sb.protections().uid_drop {
        eprintln!("skipped: no per-run uid here ({})", sb.protections());
        return;
    }
    let source = "import sys, time\n\
        sys.modules.pop('posix', None)\n\
        import posix\n\
        for _ in range(5):\n    \
            if posix.fork() == 0:\n        \
                posix.setsid()\n        \
                time.sleep(30)\n        \
                posix._exit(0)\n\
        print('forked', flush=True)\n";
    let execution = program(&sb, source, b"");
    assert_eq!(execution.stdout, "forked\n");
    assert_eq!(execution.termination, Termination::Exited(0));
}

#[test]
fn parallel_runs_do_not_interfere() {
    let sb = sandbox();
    std::thread::scope(|scope| {
        for t in 0..6 {
            let sb = &sb;
            scope.spawn(move || {
                for i in 0..4 {
                    let expect_pass = (t + i) % 2 == 0;
                    let body = if expect_pass { "x" } else { "x + 1" };
                    let setup =
                        format!("def f(x):\n    print('thread {t} run {i}')\n    return {body}\n");
                    let report = tests_of(sb, &setup, CHECK3);
                    assert_eq!(report.all_passed(), expect_pass, "{report:?}");
                    assert!(report
                        .execution
                        .stdout
                        .contains(&format!("thread {t} run {i}")));
                }
            });
        }
    });
}
