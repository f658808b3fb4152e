"""`quester env serve` spoken to by OpenEnv's own client (openenv 0.10.0).

Needs QUESTER_BIN (the quester binary); scripts/openenv-client-test.sh sets it up. Each
episode is checked against `quester env run` with the same seed and responses.
"""

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from openenv import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

OPENENV = str(Path(sys.executable).with_name("openenv"))


def play(url, seed, choose):
    """Plays one episode with OpenEnv's generic client; `choose(observation)` gives each
    response. Returns the first observation, [(response, StepResult)], the final state."""
    with GenericEnvClient(base_url=url).sync() as client:
        first = client.reset(seed=seed)
        assert first.done is False and first.reward is None
        steps = []
        obs = first.observation
        for _ in range(100):
            response = choose(obs)
            result = client.step({"message": response})
            steps.append((response, result))
            obs = result.observation
            if result.done:
                break
        return first, steps, client.state()


def check_against_env_run(env_run, env, seed, first, steps, state):
    rows = env_run(env, seed, [r for r, _ in steps])
    assert first.observation["text"] == rows[0]["observation"]
    assert len(rows) == len(steps) + 1
    for (response, result), row in zip(steps, rows[1:]):
        assert result.observation["text"] == row["observation"], response
        assert result.reward == row["reward"]
        assert result.done == row["done"]
        assert result.metadata["won"] == row["won"]
        assert result.metadata["valid"] == row["valid"]
        assert result.metadata["info"] == row["info"]
    assert steps[-1][1].done
    assert state["step_count"] == len(steps)
    assert state["done"] is True


def test_a_sokoban_episode_matches_env_run(serve, env_run):
    url = serve("sokoban")
    moves = ["<action>up</action>", "<action>left</action>", "I am not sure.",
             "<action>down</action>", "<action>right</action>"]
    count = iter(range(10**6))
    first, steps, state = play(url, 7, lambda obs: moves[next(count) % len(moves)])
    check_against_env_run(env_run, "sokoban", 7, first, steps, state)


def test_a_tictactoe_episode_from_the_listed_actions_matches_env_run(serve, env_run):
    url = serve("tictactoe")

    def choose(obs):
        listed = obs["valid_actions"]
        assert listed, obs
        action = listed[-1]
        return action if "<action>" in action else f"<action>{action}</action>"

    first, steps, state = play(url, 3, choose)
    check_against_env_run(env_run, "tictactoe", 3, first, steps, state)


def test_errors_reach_the_client_and_capacity_refuses(serve):
    url = serve("sokoban", "--max-sessions", "1")
    with GenericEnvClient(base_url=url).sync() as client:
        with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):
            client.step({"message": "<action>up</action>"})  # before any reset
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            client.step({"message": 5})
        client.reset(seed=1)
        with GenericEnvClient(base_url=url).sync() as second:
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                second.reset(seed=2)
        assert client.step({"message": "<action>up</action>"}).metadata["step_count"] == 1


def test_openenv_validate_passes(serve, tmp_path):
    url = serve("sokoban")
    report = tmp_path / "validate.json"
    proc = subprocess.run(
        [OPENENV, "validate", "--url", url, "--json", "--output", str(report)],
        capture_output=True, text=True,
    )
    data = json.loads(report.read_text())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["passed"] is True, data
    assert data["mode"] == "simulation"
    assert data["standard_profile"] == "openenv-http/1.x"
    # The stateless HTTP endpoints answer too.
    r = requests.post(f"{url}/reset", json={"seed": 7}, timeout=10)
    assert r.status_code == 200 and r.json()["done"] is False


def test_openenv_validate_passes_in_production_mode(serve, tmp_path):
    url = serve("tictactoe", "--production")
    report = tmp_path / "validate.json"
    proc = subprocess.run(
        [OPENENV, "validate", "--url", url, "--json", "--output", str(report)],
        capture_output=True, text=True,
    )
    data = json.loads(report.read_text())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["passed"] is True and data["mode"] == "production", data


def test_a_trial_with_a_reflection_through_the_client(serve):
    url = serve("sokoban", "--set", "max_turns=2", "--trial", "attempts=2,reflection=true")
    with GenericEnvClient(base_url=url).sync() as client:
        first = client.reset(seed=4)
        initial = first.observation["text"]
        assert first.metadata["phase"] == "play" and first.metadata["attempt"] == 1
        replies = [client.step({"message": "I am not sure."}) for _ in range(2)]
        assert not any(r.done for r in replies)
        ask = replies[-1]
        assert ask.metadata["phase"] == "reflect" and ask.metadata["attempt"] == 2
        assert ask.metadata["attempt_reward"] == sum(r.reward for r in replies)
        assert "<remark>" in ask.observation["text"]
        play = client.step({"message": "<remark>push the box first</remark>"})
        assert play.metadata["phase"] == "play" and play.reward == 0.0
        text = play.observation["text"]
        # The reflection is remembered, and the env restarted to the same initial state.
        assert "Your reflection is: push the box first" in text
        assert text.endswith(initial)
        last = [client.step({"message": "<action>up</action>"}) for _ in range(2)][-1]
        assert last.done and last.metadata["phase"] == "done"
        assert len(last.metadata["attempt_rewards"]) == 2
        assert client.state()["attempt"] == 2


def test_mcp_tools_through_openenvs_mcp_client(serve):
    """OpenEnv's MCPToolClient (production mode: HTTP /mcp, its own session) lists the tools
    and plays an episode with them; closing the client closes the server's session."""
    url = serve("tictactoe", "--max-sessions", "1")

    async def play():
        client = MCPToolClient(base_url=url)
        try:
            tools = await client.list_tools()
            assert [t.name for t in tools] == ["reset", "step", "state"]
            assert tools[1].input_schema["required"] == ["action"]
            payload = await client.call_tool("reset", seed=3)
            steps = 0
            while not payload["done"]:
                action = payload["observation"]["valid_actions"][0]
                payload = await client.call_tool("step", action=f"<action>{action}</action>")
                steps += 1
            state = await client.call_tool("state")
            assert state["step_count"] == steps and state["done"] is True
        finally:
            await client.close()

    asyncio.run(play())
    # The session is gone, so the one slot is free for a WebSocket session.
    with GenericEnvClient(base_url=url).sync() as client:
        assert client.reset(seed=1).done is False
