"""The in-process envs against `quester env run` with the same seed and responses."""

import pytest

import quester_envs
from conftest import listed_policy, play

SOKOBAN_MOVES = ["<action>up</action>", "<action>left</action>", "I am not sure.",
                 "<action>down</action>", "<action>right</action>"]


def sokoban_policy():
    turn = iter(range(10**6))
    return lambda obs, info: SOKOBAN_MOVES[next(turn) % len(SOKOBAN_MOVES)]


CASES = [
    ("sokoban", 7, sokoban_policy),
    ("tictactoe", 3, lambda: listed_policy(lambda n, t: n - 1)),
    ("minesweeper", 5, lambda: listed_policy(lambda n, t: 7 * t + 3)),
    ("kuhn", 2, lambda: listed_policy(lambda n, t: t)),
]


@pytest.mark.parametrize("name,seed,policy", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("offset", [0, 11])
def test_an_episode_matches_env_run(env_run, name, seed, policy, offset):
    env = quester_envs.make(name)
    (obs, info), steps = play(env, seed + offset, policy())
    rows = env_run(name, seed + offset, [response for response, _ in steps])
    assert obs == rows[0]["observation"]
    assert info["seed"] == seed + offset and info["step_count"] == 0
    assert len(rows) == len(steps) + 1
    for i, ((response, (obs, reward, terminated, truncated, info)), row) in enumerate(
        zip(steps, rows[1:]), start=1
    ):
        assert obs == row["observation"], response
        assert reward == row["reward"]
        assert terminated == row["done"]
        assert truncated is False
        assert info["won"] == row["won"]
        assert info["valid"] == row["valid"]
        assert info["info"] == row["info"]
        assert info["step_count"] == i
    assert steps[-1][1][2], "the episode ended"
    final = steps[-1][1][4]
    assert "outcome" in final and final["valid_actions"] is None
    state = env.state()
    assert state["done"] is True and state["step_count"] == len(steps)
    assert state["total_reward"] == pytest.approx(sum(s[1][1] for s in steps))


def test_settings_reach_the_env(env_run):
    env = quester_envs.make("sokoban", num_boxes=1, max_turns=3)
    assert env.max_turns == 3
    (obs, _), _ = play(env, 4, sokoban_policy())
    assert obs.count("X") + obs.count("√") <= 1
