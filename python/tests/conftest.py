"""Shared helpers: `quester env run` (the reference the envs are checked against) and playing
an episode in process."""

import json
import os
import shutil
import subprocess

import pytest


@pytest.fixture(scope="session")
def quester_bin():
    """The quester binary (QUESTER_BIN, else `quester` on PATH); tests needing it skip
    without it. scripts/python-package-test.sh always sets it."""
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


def listed_policy(pick):
    """A policy choosing among the listed valid actions: `pick(actions, turn)` gives an index."""
    turn = iter(range(10**6))

    def choose(obs, info):
        actions = info["valid_actions"]
        assert actions, info
        return f"<action>{actions[pick(len(actions), next(turn)) % len(actions)]}</action>"

    return choose


def play(env, seed, choose, limit=200):
    """Plays one episode in process; returns (first obs, first info, [(response, step)])."""
    obs, info = env.reset(seed=seed)
    first = (obs, info)
    steps = []
    for _ in range(limit):
        response = choose(obs, info)
        result = env.step(response)
        steps.append((response, result))
        obs, info = result[0], result[4]
        if result[2]:
            break
    return first, steps
