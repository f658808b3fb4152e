"""Pytest fixtures shared by the two Python suites that talk to quester (tests/python: OpenEnv's
client against `quester env serve`; python/tests: the quester_envs package): the quester
binary, `quester env run` as the reference, and `quester env serve` on a free port. Each
suite's conftest.py imports them."""

import json
import os
import re
import shutil
import subprocess
import time

import pytest


@pytest.fixture(scope="session")
def quester_bin():
    """The quester binary (QUESTER_BIN, else `quester` on PATH); tests needing it skip
    without it. The scripts running the suites always set it."""
    path = os.environ.get("QUESTER_BIN") or shutil.which("quester")
    if not path:
        pytest.skip("no quester binary: set QUESTER_BIN")
    return path


@pytest.fixture
def env_run(quester_bin, tmp_path):
    """`quester env run`'s JSON lines for these responses (line 0: the first observation)."""

    def run(env, seed, responses):
        actions = tmp_path / "actions.jsonl"
        actions.write_text("".join(json.dumps(r) + "\n" for r in responses))
        out = subprocess.run(
            [quester_bin, "env", "run", env, "--seed", str(seed), "--actions", str(actions),
             "--json-strings"],
            check=True, capture_output=True, text=True,
        ).stdout
        return [json.loads(line) for line in out.splitlines()]

    return run


@pytest.fixture
def serve(quester_bin, tmp_path):
    """Starts `quester env serve ENV [ARGS...]` on a free loopback port (`serve(env, *args)`
    returns its base URL, read from the log); the servers stop when the test ends."""
    has_serve = subprocess.run([quester_bin, "env", "serve", "--help"], capture_output=True)
    if has_serve.returncode != 0:
        pytest.skip(f"{quester_bin} predates `quester env serve`")
    procs = []

    def start(env, *args):
        log = tmp_path / f"serve-{env}-{len(procs)}.log"
        with open(log, "w") as f:
            proc = subprocess.Popen(
                [quester_bin, "env", "serve", env, "--addr", "127.0.0.1:0", *args],
                stdout=f,
                stderr=subprocess.STDOUT,
                env={**os.environ, "NO_COLOR": "1"},
            )
        procs.append(proc)
        deadline = time.time() + 60
        while time.time() < deadline:
            match = re.search(r"on (http://127\.0\.0\.1:\d+)", log.read_text())
            if match:
                return match.group(1)
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        raise AssertionError(f"server did not log its address: {log.read_text()}")

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)
