"""Threads stepping envs at once: each env's episode is what a lone thread gets."""

import threading
import time
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


def test_a_step_releases_the_gil():
    """While one thread is inside a long step (an MCTS opponent with many simulations), another
    Python thread keeps running: the step does not hold the GIL."""
    env = quester_envs.make("tictactoe", simulations=200_000, agent_first=True)
    _, info = env.reset(seed=0)
    ticks, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        time.sleep(0.01)
        before = ticks[0]
        started = time.perf_counter()
        env.step("<action>(2, 2)</action>")
        elapsed = time.perf_counter() - started
        during = ticks[0] - before
    finally:
        stop.set()
        counter.join()
    assert elapsed > 0.02, "the step was too short to tell"
    # Holding the GIL, the step would leave the counter where it was (or a switch or two).
    assert during > 1000, (during, elapsed)
