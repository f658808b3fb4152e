#!/usr/bin/env python3
"""Steps/s of the in-process Python package (quester_envs) against the plain-Python envs of
bench/games_anchor.py, on the same games, in one run.

Same protocol as bench/games_anchor.py and examples/bench_games.rs: episodes from consecutive
seeds, a seeded random agent choosing among the admissible actions, the loop (reset, the
admissible actions, step) timed with this thread's CPU time. The package's admissible actions
are `info["valid_actions"]`, which every reset and step returns (the anchor lists them with a
separate call). Sokoban has no plain-Python anchor here (bench/sokoban.sh compares it with
gym-sokoban); its in-process rate is printed alone.

Usage: python_envs.py [MINESWEEPER_EPISODES] [TICTACTOE_EPISODES] [SOKOBAN_EPISODES]
Prints a table, then one JSON line.
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import games_anchor  # noqa: E402
import quester_envs  # noqa: E402


def run_package(env, episodes):
    agent = random.Random(7)
    steps = 0
    start, wall = time.thread_time(), time.perf_counter()
    for seed in range(episodes):
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            acts = info["valid_actions"]
            text = "<action>%s</action>" % acts[agent.randrange(len(acts))]
            _, _, done, _, info = env.step(text)
            steps += 1
    return {"episodes": episodes, "steps": steps, "seconds": time.thread_time() - start,
            "wall_seconds": time.perf_counter() - wall}


def run_anchor(env, episodes):
    wall = time.perf_counter()
    row = games_anchor.run(env, episodes)
    row["wall_seconds"] = time.perf_counter() - wall
    return row


def rate(row):
    return row["steps"] / row["seconds"]


def main():
    ms_eps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    ttt_eps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    sok_eps = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    games = [
        ("minesweeper 6x6, 3 mines", quester_envs.make("minesweeper"),
         games_anchor.MineSweeper(), ms_eps),
        ("tictactoe vs mcts (100 sims)", quester_envs.make("tictactoe"),
         games_anchor.TicTacToe(), ttt_eps),
    ]
    result = {"python": sys.version.split()[0]}
    print("| game | quester_envs steps/s | plain Python steps/s | ratio |")
    print("| --- | --- | --- | --- |")
    for name, ours, anchor, episodes in games:
        a, b = run_package(ours, episodes), run_anchor(anchor, episodes)
        result[name] = {"quester_envs": a, "plain_python": b, "ratio": rate(a) / rate(b)}
        print(f"| {name} | {rate(a):,.0f} | {rate(b):,.0f} | **{rate(a) / rate(b):.1f}x** |")
    sok = run_package(quester_envs.make("sokoban"), sok_eps)
    result["sokoban 6x6, 2 boxes"] = {"quester_envs": sok}
    print(f"| sokoban 6x6, 2 boxes (room generation in reset) | {rate(sok):,.0f} | - | - |")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
