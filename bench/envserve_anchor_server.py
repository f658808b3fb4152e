#!/usr/bin/env python3
"""The anchor for bench/envserve.sh: OpenEnv's own Python server (`openenv` 0.10.0's
`create_app`, run by uvicorn) over plain-Python games, one game per server.

MineSweeper and Tic-Tac-Toe (vs MCTS-100) are bench/games_anchor.py's; Sokoban is
bench/sokoban_plain.py's. Each is wrapped as an OpenEnv `Environment` whose action and
observation carry the fields quester's server uses (`message`; `text`, `valid_actions`), so the
same client drives both servers.

Usage: envserve_anchor_server.py GAME PORT
"""
import sys
import uuid
from pathlib import Path
from typing import List, Optional

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from games_anchor import MineSweeper, TicTacToe  # noqa: E402
from sokoban_plain import Sokoban  # noqa: E402

GAMES = {"sokoban": Sokoban, "minesweeper": MineSweeper, "tictactoe": TicTacToe}


class TextAction(Action):
    message: str


class TextObservation(Observation):
    text: str = ""
    valid_actions: Optional[List[str]] = None


def environment_class(game):
    class GameEnvironment(Environment):
        # Every session has its own game object, so sessions may run side by side.
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self):
            super().__init__()
            self.game = game()
            self._state = State(episode_id=None, step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs):
            text = self.game.reset(0 if seed is None else seed)
            self._state = State(episode_id=episode_id or uuid.uuid4().hex, step_count=0)
            return TextObservation(text=text, valid_actions=self.game.admissible())

        def step(self, action, timeout_s=None, **kwargs):
            text, reward, done = self.game.step(action.message)
            self._state.step_count += 1
            listed = None if done else self.game.admissible()
            return TextObservation(text=text, valid_actions=listed, reward=reward, done=done)

        @property
        def state(self):
            return self._state

    return GameEnvironment


def main():
    game, port = sys.argv[1], int(sys.argv[2])
    app = create_app(
        environment_class(GAMES[game]),
        TextAction,
        TextObservation,
        env_name=game,
        max_concurrent_envs=64,
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
