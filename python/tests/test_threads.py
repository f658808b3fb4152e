"""Threads stepping envs at once: each env's episode is what a lone thread gets."""

import threading
from concurrent.futures import ThreadPoolExecutor

import quester_envs
from conftest import listed_policy, play


def episode(name, seed):
    env = quester_envs.make(name)
    first, steps = play(env, seed, listed_policy(lambda n, t: 3 * t + seed))
    return first[0], [(r, s[0], s[1], s[2]) for r, s in steps]


def test_threads_each_with_an_env_match_a_lone_thread():
    jobs = [(name, seed) for name in ["sokoban", "minesweeper", "tictactoe", "kuhn"]
            for seed in range(8)]
    alone = [episode(*job) for job in jobs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda job: episode(*job), jobs))
    assert together == alone


def test_threads_sharing_one_env_take_turns():
    env = quester_envs.make("sokoban", max_turns=1000, max_moves=10_000)
    env.reset(seed=0)
    barrier = threading.Barrier(4)

    def worker():
        barrier.wait()
        for _ in range(200):
            env.step("<action>left</action>")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert env.state()["step_count"] == 800
