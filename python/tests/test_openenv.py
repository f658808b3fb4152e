"""The OpenEnv subclass served by openenv's own `create_app` (uvicorn on loopback), played by
openenv's `GenericEnvClient`: the same replies as the env in process and as `quester env serve`."""

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

openenv = pytest.importorskip("openenv")
uvicorn = pytest.importorskip("uvicorn")

from openenv import GenericEnvClient  # noqa: E402

import quester_envs  # noqa: E402
from quester_envs.openenv import create_app  # noqa: E402


@pytest.fixture
def python_server():
    """Serves `create_app(env, **settings)` with uvicorn on a free loopback port; yields a
    starter returning the base URL."""
    servers = []

    def start(env, **settings):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(create_app(env, **settings), log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        servers.append((server, thread))
        deadline = time.time() + 30
        while not server.started:
            assert time.time() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


def client_episode(url, seed, responses):
    """Replies to a reset (with a fixed episode id) and `responses`, and the final state."""
    with GenericEnvClient(base_url=url).sync() as client:
        replies = [client.reset(seed=seed, episode_id="ep-1")]
        for response in responses:
            replies.append(client.step({"message": response}))
            if replies[-1].done:
                break
        return replies, client.state()


def tictactoe_responses(seed):
    """A whole Tic-Tac-Toe episode's responses, chosen in process from the listed actions."""
    env = quester_envs.make("tictactoe")
    _, info = env.reset(seed=seed)
    responses = []
    while True:
        responses.append(f"<action>{info['valid_actions'][-1]}</action>")
        *_, done, _, info = env.step(responses[-1])
        if done:
            return responses


SOKOBAN = ["<action>up</action>", "<action>left</action>", "I am not sure.",
           "<action>down</action>", "<action>right</action>"] * 3


def test_an_episode_over_create_app_matches_the_env_in_process(python_server):
    url = python_server("sokoban")
    replies, state = client_episode(url, 7, SOKOBAN)
    env = quester_envs.make("sokoban")
    obs, info = env.reset(seed=7, options={"episode_id": "ep-1"})
    first = replies[0]
    assert first.reward is None and first.done is False
    assert first.observation["text"] == obs
    assert first.observation["valid_actions"] == info.pop("valid_actions")
    assert first.metadata == info
    for response, reply in zip(SOKOBAN, replies[1:]):
        obs, reward, done, _, info = env.step(response)
        assert reply.observation["text"] == obs
        assert (reply.reward, reply.done) == (reward, done)
        assert reply.observation["valid_actions"] == info.pop("valid_actions")
        assert reply.metadata == info
    assert state == env.state()


@pytest.mark.parametrize("name,seed,responses", [
    ("sokoban", 7, SOKOBAN),
    ("tictactoe", 3, tictactoe_responses(3)),
])
def test_clients_see_the_same_replies_as_from_quester_env_serve(
    python_server, serve, name, seed, responses
):
    ours, our_state = client_episode(python_server(name), seed, responses)
    theirs, their_state = client_episode(serve(name), seed, responses)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert (a.observation, a.reward, a.done, a.metadata) == (
            b.observation, b.reward, b.done, b.metadata)
    assert our_state == their_state


def test_errors_reach_the_client(python_server):
    url = python_server("sokoban")
    with GenericEnvClient(base_url=url).sync() as client:
        with pytest.raises(RuntimeError, match="step before reset"):
            client.step({"message": "<action>up</action>"})
        with pytest.raises(RuntimeError):
            client.step({"message": 5})
        with pytest.raises(RuntimeError, match="num_boxs"):
            client.reset(seed=1, num_boxs=2)
        client.reset(seed=1)
        assert client.step({"message": "<action>up</action>"}).metadata["step_count"] == 1


def test_a_bad_env_fails_when_the_app_is_made():
    with pytest.raises(ValueError, match="available"):
        create_app("chess")


def test_openenv_validate_passes(python_server, tmp_path):
    url = python_server("tictactoe")
    report = tmp_path / "validate.json"
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("openenv")), "validate", "--url", url, "--json",
         "--output", str(report)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(report.read_text())["passed"] is True
