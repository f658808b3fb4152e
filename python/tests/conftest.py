"""Shared helpers: the fixtures shared with tests/python (tests/pylib/quester_fixtures.py:
the quester binary, `quester env run`, `quester env serve`) and playing an episode in
process."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "pylib"))

from quester_fixtures import env_run, quester_bin, serve  # noqa: E402,F401


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
