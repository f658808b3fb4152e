# The quester sandbox harness: runs inside the sandboxed interpreter
# (`python3 -I -S -B -X utf8 -c BOOT`, BOOT in lib.rs reads this file's compiled code off
# stdin and runs it), started by quester-sandbox.
#
# After that, stdin holds the job as fields, each "<length>\n<bytes>": nonce, mode, then
# setup, tests, entry, per-test seconds, per-test label (mode "tests") or source (mode "run").
# Whatever follows is the submission's own stdin (run mode) or nothing (tests mode).
# Results go to fd 3 as lines "<nonce> <event> <fields>", strings as "x<hex of UTF-8>", one
# write per event, as each one happens, so a run killed at the wall limit still leaves the
# events written before. Only C modules are imported up front (json, ast and signal would
# cost more start-up than everything else here); everything is inside functions so that the
# submission's namespace holds none of it.


def _main():
    import os
    import sys

    write = os.write
    hard_exit = os._exit
    read = os.read

    def read_exact(n):
        chunks = []
        while n > 0:
            chunk = read(0, min(n, 1 << 20))
            if not chunk:
                hard_exit(70)
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read_field():
        # Byte by byte up to the newline: a buffered read could swallow the submission's stdin.
        head = b""
        while not head.endswith(b"\n"):
            c = read(0, 1)
            if not c or len(head) > 20:
                hard_exit(70)
            head += c
        return read_exact(int(head)).decode("utf-8", "surrogateescape")

    def make_emit(tag):
        # The nonce lives only in this closure (see docs/sandbox.md for what that does not stop).
        prefix = b"\n" + tag + b" "

        def emit(kind, *fields):
            try:
                parts = [kind]
                for f in fields:
                    if isinstance(f, str):
                        parts.append("x" + f.encode("utf-8", "replace").hex())
                    else:
                        parts.append(str(int(f)))
                data = prefix + " ".join(parts).encode("ascii") + b"\n"
                while data:
                    data = data[write(3, data) :]
            except BaseException:
                pass

        return emit

    emit = make_emit(read_field().encode("ascii"))
    mode = read_field()

    def finish(code):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        hard_exit(code)

    def describe(exc):
        try:
            name = type(exc).__name__
        except BaseException:
            name = "exception"
        try:
            text = str(exc)
        except BaseException:
            text = ""
        msg = name + (": " + text if text else "")
        return msg if len(msg) <= 300 else msg[:297] + "..."

    if mode == "run":
        run_program(read_field(), emit, finish, describe)
    else:
        job = {
            "setup": read_field(),
            "tests": read_field(),
            "entry": read_field(),
            "per_test": read_field(),
            "per_test_label": read_field(),
        }
        run_tests(job, emit, finish, describe)


def syntax_message(exc):
    # ValueError (a NUL byte in the source) has neither msg nor lineno.
    where = " (line %s)" % exc.lineno if getattr(exc, "lineno", None) else ""
    return "%s: %s%s" % (type(exc).__name__, getattr(exc, "msg", exc), where)


def run_program(source, emit, finish, describe):
    import sys

    try:
        code = compile(source, "main.py", "exec")
    except (SyntaxError, ValueError) as exc:
        import traceback

        traceback.print_exception(type(exc), exc, None)
        finish(1)
    module = type(sys)("__main__")
    module.__file__ = "main.py"
    sys.modules["__main__"] = module
    sys.argv = ["main.py"]
    install_guards()
    try:
        exec(code, module.__dict__)
    except SystemExit as exc:
        status = exc.code
        if status is None:
            finish(0)
        if isinstance(status, int):
            finish(status & 0xFF)
        try:
            print(status, file=sys.stderr)
        except BaseException:
            pass
        finish(1)
    except BaseException as exc:
        if isinstance(exc, MemoryError):
            emit("memory")
        try:
            import traceback

            # Drop the harness's own frame from the traceback.
            traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
        except BaseException:
            try:
                sys.stderr.write(describe(exc) + "\n")
            except BaseException:
                pass
        finish(1)
    finish(0)


def split_lines(source):
    """Lines with their ends, split only where the tokenizer splits (\\n, \\r\\n, \\r)."""
    if "\r" not in source:
        lines = [line + "\n" for line in source.split("\n")]
        lines[-1] = lines[-1][:-1]
        return lines
    lines, start, i, n = [], 0, 0, len(source)
    while i < n:
        c = source[i]
        if c == "\n" or c == "\r":
            i += 2 if source[i : i + 2] == "\r\n" else 1
            lines.append(source[start:i])
            start = i
        else:
            i += 1
    lines.append(source[start:])
    return lines


def run_tests(job, emit, finish, describe):
    import _ast
    import sys

    def end():
        # "done": the harness reached an orderly end (after the tests or after an error it
        # reported); without it the process was cut short.
        emit("done")
        finish(0)

    def fail(message):
        emit("error", 0, message)
        end()

    source = job["tests"]
    per_test = float(job["per_test"])
    per_test_label = job["per_test_label"]

    # Parse and split the tests before any submitted code runs, so the count is known even if
    # the submission hangs while loading. The `ast` module would cost more start-up than the
    # rest of the harness: _ast and compile() do the same work.
    try:
        tree = compile(source, "tests.py", "exec", _ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError) as exc:
        emit("tests", 0)
        fail("the test source does not parse: " + syntax_message(exc))
    checks = [n for n in tree.body if isinstance(n, _ast.FunctionDef) and n.name == "check"]
    if not checks:
        emit("tests", 0)
        fail("the test source defines no check() function")
    check = checks[-1]
    top = [n for n in tree.body if n is not check]
    params = check.args.posonlyargs + check.args.args
    param = params[0].arg if params else "candidate"
    # Column offsets count UTF-8 bytes.
    lines = [line.encode("utf-8", "surrogatepass") for line in split_lines(source)]
    helpers = (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef, _ast.Lambda)

    def contains_assert(node):
        # A nested def or class only defines a helper; its asserts run when something calls it.
        if isinstance(node, helpers):
            return False
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, _ast.Assert):
                return True
            for name in n._fields:
                value = getattr(n, name, None)
                children = value if isinstance(value, list) else [value]
                for child in children:
                    if isinstance(child, _ast.AST) and not isinstance(child, helpers):
                        stack.append(child)
        return False

    def segment(node):
        # What ast.get_source_segment returns: from the start column of the first line to the
        # end column of the last.
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            chunk = lines[first][node.col_offset : node.end_col_offset]
        else:
            chunk = b"".join(
                [lines[first][node.col_offset :]] + lines[first + 1 : last] + [lines[last][: node.end_col_offset]]
            )
        return chunk.decode("utf-8", "replace")

    steps = []  # (is_test, code, text, line)
    test_sources = []
    try:
        for stmt in check.body:
            is_test = contains_assert(stmt)
            text = segment(stmt)
            code = compile(_ast.Module(body=[stmt], type_ignores=[]), "tests.py", "exec")
            steps.append((is_test, code, text, stmt.lineno))
            if is_test:
                test_sources.append(text)
        top_code = compile(_ast.Module(body=top, type_ignores=[]), "tests.py", "exec")
    except (SyntaxError, ValueError) as exc:
        emit("tests", 0)
        fail("the test source does not compile: " + syntax_message(exc))
    emit("tests", len(test_sources), *test_sources)
    del tree, checks, check, top

    try:
        setup_code = compile(job["setup"], "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:
        fail("the submission does not compile: " + syntax_message(exc))
    entry = job["entry"]
    del job

    import _signal

    setitimer = _signal.setitimer
    ITIMER_REAL = _signal.ITIMER_REAL

    class TestTimeout(BaseException):
        # BaseException, so the submission's `except Exception` does not swallow it.
        pass

    armed = [False]
    fired = [False]

    def on_alarm(signum, frame):
        if armed[0]:
            fired[0] = True
            raise TestTimeout()

    _signal.signal(_signal.SIGALRM, on_alarm)

    def run_timed(code, scope):
        """Runs one statement under the per-test timer; returns None or a failure message."""
        fired[0] = False
        try:
            try:
                armed[0] = True
                # The interval raises again every 0.1 s in case the code catches the first one.
                setitimer(ITIMER_REAL, per_test, 0.1)
                exec(code, scope)
            finally:
                armed[0] = False
                setitimer(ITIMER_REAL, 0, 0)
        except BaseException as exc:
            if fired[0]:
                return "timed out after " + per_test_label
            return describe(exc)
        if fired[0]:
            return "timed out after " + per_test_label
        return None

    module = type(sys)("submission")
    module.__file__ = "solution.py"
    sys.modules["submission"] = module
    namespace = module.__dict__

    guards = install_guards()
    try:
        exec(setup_code, namespace)
    except MemoryError:
        emit("error", 1, "the submission ran out of memory while loading (MemoryError)")
        end()
    except BaseException as exc:
        fail("the submission raised " + describe(exc) + " while loading")
    try:
        exec(top_code, namespace)
    except BaseException as exc:
        fail("the test source raised " + describe(exc) + " outside check()")
    # Undo whatever the submission did to the builtins module before the tests use it.
    guards.restore_builtins()

    if entry not in namespace:
        fail("entry point `%s` is not defined" % entry)
    candidate = namespace[entry]
    if not callable(candidate):
        fail("entry point `%s` is not callable" % entry)
    # The check body's own names shadow the submission's globals, as a function's locals would;
    # the submission's functions keep their own globals.
    scope = dict(namespace)
    scope[param] = candidate

    index = 0
    for is_test, code, text, line in steps:
        failure = run_timed(code, scope)
        if is_test:
            emit("result", index, failure is None, failure or "")
            index += 1
        elif failure is not None:
            short = text if len(text) <= 80 else text[:77] + "..."
            emit("error", 0, "line %d of check() (`%s`) raised %s" % (line, short, failure))
    end()


class _Guards:
    def __init__(self, builtins_snapshot):
        self._snapshot = builtins_snapshot

    def restore_builtins(self):
        import builtins

        current = builtins.__dict__
        for name in [n for n in current if n not in self._snapshot]:
            del current[name]
        current.update(self._snapshot)


def install_guards():
    """Disables what a test program has no business doing, with readable errors.

    This layer only turns honest mistakes and naive attempts into clear exceptions: Python code
    can undo it (for one, by re-importing a C module), so the kernel layers (rlimits, the network
    namespace, Landlock, the dropped uid) are what actually hold.
    """
    import builtins
    import os
    import _signal
    import posix
    import sys

    getcwd = os.getcwd
    readlink = os.readlink
    fspath = os.fspath
    fsdecode = os.fsdecode
    join = os.path.join
    dirname = os.path.dirname
    basename = os.path.basename
    realpath = os.path.realpath
    isabs = os.path.isabs
    root = realpath(getcwd())

    def refuse(what, message=None):
        message = message or what + " is disabled in the sandbox"

        def refused(*args, **kwargs):
            raise PermissionError(message)

        refused.__name__ = what.rsplit(".", 1)[-1]
        return refused

    def inside(path, dir_fd=None):
        try:
            if isinstance(path, int):
                return True  # an fd already opened, so already checked
            path = fsdecode(fspath(path))
            if isabs(path):
                full = path
            elif dir_fd is not None:
                full = join(readlink("/proc/self/fd/%d" % dir_fd), path)
            else:
                full = join(getcwd(), path)
            # The parent is resolved, the last component is not: removing a symlink that points
            # outside is fine.
            full = join(realpath(dirname(full)), basename(full))
            return full == root or full.startswith(root + "/")
        except BaseException:
            return False

    def outside_error(what, path):
        return PermissionError("%s: %r is outside the sandbox directory" % (what, path))

    def paths_guard(name, fn, positions, fd_keys):
        def guarded(*args, **kwargs):
            for pos, key in zip(positions, fd_keys):
                if pos < len(args):
                    path = args[pos]
                elif pos == 0 and "path" in kwargs:
                    path = kwargs["path"]
                else:
                    continue
                if not inside(path, kwargs.get(key)):
                    raise outside_error("os." + name, path)
            return fn(*args, **kwargs)

        guarded.__name__ = name
        return guarded

    targets = (os, posix)

    def patch(name, value):
        for mod in targets:
            if hasattr(mod, name):
                setattr(mod, name, value)

    for name in (
        "fork", "forkpty", "system", "popen", "execv", "execve", "execl", "execle", "execlp",
        "execlpe", "execvp", "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv",
        "spawnve", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "kill", "killpg",
        "setsid", "setpgid", "setpgrp", "setuid", "seteuid", "setreuid", "setresuid", "setgid",
        "setegid", "setregid", "setresgid", "setgroups", "chroot", "_exit",
        "pidfd_open", "plock",
    ):
        patch(name, refuse("os." + name))

    one_path = ("remove", "unlink", "rmdir", "removedirs", "truncate", "chmod", "chown", "lchown",
                "lchmod", "chflags", "lchflags", "mkdir", "mkfifo", "mknod", "utime", "setxattr",
                "removexattr")
    for name in one_path:
        fn = getattr(os, name, None)
        if fn is not None:
            patch(name, paths_guard(name, fn, (0,), ("dir_fd",)))
    for name in ("rename", "renames", "replace", "link"):
        fn = getattr(os, name, None)
        if fn is not None:
            patch(name, paths_guard(name, fn, (0, 1), ("src_dir_fd", "dst_dir_fd")))
    fn = getattr(os, "symlink", None)
    if fn is not None:
        patch("symlink", paths_guard("symlink", fn, (1,), ("dir_fd",)))

    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    raw_open = os.open

    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & write_flags and not inside(path, kwargs.get("dir_fd")):
            raise outside_error("os.open", path)
        return raw_open(path, flags, *args, **kwargs)

    patch("open", guarded_os_open)

    import io

    real_open = builtins.open

    def guarded_open(file, mode="r", *args, **kwargs):
        if isinstance(mode, str) and any(c in mode for c in "wax+") and not inside(file):
            raise outside_error("open", file)
        return real_open(file, mode, *args, **kwargs)

    builtins.open = guarded_open
    io.open = guarded_open

    # The per-test timer is the harness's; other signals are the submission's business.
    # Patched in _signal: the signal module, imported later, copies these and calls
    # _signal.signal at call time.
    real_signal = _signal.signal
    reserved = (_signal.SIGALRM, _signal.SIGXCPU)

    def guarded_signal(signum, handler):
        if signum in reserved:
            raise PermissionError("the SIGALRM/SIGXCPU handlers belong to the test harness")
        return real_signal(signum, handler)

    signal_modules = [_signal] + ([sys.modules["signal"]] if "signal" in sys.modules else [])
    for mod in signal_modules:
        mod.signal = guarded_signal
        for name in ("setitimer", "alarm", "pthread_sigmask", "pthread_kill", "siginterrupt",
                     "sigwait", "sigwaitinfo", "sigtimedwait"):
            if hasattr(mod, name):
                setattr(mod, name, refuse("signal." + name))

    # Network: the socket module still imports (much of the stdlib mentions it), but a socket
    # cannot be made.
    import _socket

    fake_socket = type(sys)("_socket")
    fake_socket.__dict__.update(_socket.__dict__)

    class NoSocket:
        __slots__ = ()  # socket.socket adds its own __weakref__ slot

        def __init__(self, *args, **kwargs):
            raise PermissionError("network access is disabled in the sandbox")

    fake_socket.socket = NoSocket
    fake_socket.SocketType = NoSocket
    for name in ("socketpair", "fromfd", "dup", "getaddrinfo", "gethostbyname", "gethostbyname_ex",
                 "gethostbyaddr", "getnameinfo", "create_connection", "create_server"):
        if hasattr(fake_socket, name):
            setattr(fake_socket, name, refuse(name, "network access is disabled in the sandbox"))
    sys.modules["_socket"] = fake_socket
    sys.modules.pop("socket", None)

    # Process creation through subprocess/multiprocessing ends in _posixsubprocess.fork_exec.
    fake_spawn = type(sys)("_posixsubprocess")
    fake_spawn.fork_exec = refuse("subprocess")
    sys.modules["_posixsubprocess"] = fake_spawn
    for name in ("ctypes", "_ctypes", "resource", "psutil", "_xxsubinterpreters"):
        sys.modules[name] = None

    return _Guards(dict(builtins.__dict__))


_main()
