"""Bad input raises a Python exception with a clear message; nothing crashes."""

import pytest

import quester_envs


def test_list_envs_names_the_registered_envs():
    names = quester_envs.list_envs()
    for name in ["sokoban", "minesweeper", "tictactoe", "kuhn", "webshop", "coding"]:
        assert name in names


def test_an_unknown_env_lists_the_allowed_ones():
    with pytest.raises(ValueError) as e:
        quester_envs.make("chess")
    message = str(e.value)
    assert "`chess`" in message
    assert all(name in message for name in quester_envs.list_envs())


def test_an_unknown_setting_is_named():
    with pytest.raises(ValueError, match="unknown field `num_boxs`.*num_boxes"):
        quester_envs.make("sokoban", num_boxs=2)


@pytest.mark.parametrize(
    "value,match",
    [(None, "`num_boxes`: None"), (object(), "`num_boxes`: a .*object"),
     (float("nan"), "`num_boxes`: NaN"), (1 << 70, "`num_boxes`: .*64-bit"),
     ("two", "num_boxes")],
)
def test_a_bad_setting_value_is_named(value, match):
    with pytest.raises(ValueError, match=match):
        quester_envs.make("sokoban", num_boxes=value)


def test_step_before_reset_and_after_the_end_raise():
    env = quester_envs.make("tictactoe")
    with pytest.raises(RuntimeError, match="step before reset"):
        env.step("<action>(1, 1)</action>")
    obs, info = env.reset(seed=1)
    while True:
        *_, done, _, info = env.step(f"<action>{info['valid_actions'][0]}</action>")
        if done:
            break
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step("<action>(1, 1)</action>")
    env.reset(seed=2)  # a reset starts again
    assert env.state()["step_count"] == 0


@pytest.mark.parametrize(
    "seed,error", [(-1, ValueError), (1 << 64, ValueError), ("3", TypeError), (1.5, TypeError),
                   (True, TypeError)],
)
def test_bad_seeds_raise(seed, error):
    with pytest.raises(error, match="seed"):
        quester_envs.make("sokoban").reset(seed=seed)


def test_a_non_text_action_raises_and_hostile_text_is_an_invalid_step():
    env = quester_envs.make("sokoban")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="PyString"):
        env.step(b"<action>up</action>")
    for text in ["", "\x00" * 10, "<action>" * 10_000, "<action>\ud7ff</action>", "x" * 1_000_000]:
        _, reward, _, _, info = env.step(text)
        assert info["valid"] is False
        if env.state()["done"]:
            env.reset(seed=0)


def test_an_unencodable_string_raises():
    env = quester_envs.make("sokoban")
    env.reset(seed=0)
    with pytest.raises(UnicodeEncodeError):
        env.step("<action>\ud800</action>")  # a lone surrogate has no UTF-8
    assert env.state()["step_count"] == 0


def test_a_closed_env_raises():
    env = quester_envs.make("kuhn")
    env.reset(seed=0)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step("<action>check</action>")
    with pytest.raises(RuntimeError, match="closed"):
        env.reset(seed=0)


def test_reset_options_carry_an_episode_id_and_settings():
    env = quester_envs.make("sokoban")
    _, info = env.reset(seed=1, options={"episode_id": "e1"})
    assert info["episode_id"] == "e1" and info["seed"] == 1
    _, info = env.reset(options={"max_turns": 2})
    assert env.max_turns == 2 and 0 <= info["seed"] < 1 << 64
    with pytest.raises(ValueError, match="bogus"):
        env.reset(seed=1, options={"bogus": 1})
    assert env.max_turns == 2  # the failed reset left the env as it was


def test_settings_from_options_last_one_episode():
    env = quester_envs.make("sokoban", max_turns=5)
    env.reset(seed=1, options={"max_turns": 2})
    assert env.max_turns == 2
    env.reset(seed=1)
    assert env.max_turns == 5
