"""The reference side of bench/scienceworld.sh: the `scienceworld` Python package (1.2.3, py4j)
replaying the same gold paths as our env, over the same jar.

    python bench/scienceworld_reference.py REPEATS TASK...

For each task: load variation 0 of train with "easy" and the gold path, then REPEATS times
reset() and step() through the gold path, stopping where it is done (as our env does). step() is the package's own: it also fetches look,
inventory, the task description and the valid actions for its info dict, as our default
observation fetches the room, inventory and valid actions. Prints RESULT lines.
"""
import os
import sys
import time

from scienceworld import ScienceWorldEnv


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    tasks = sys.argv[2:] or ["find-non-living-thing", "find-animal", "find-plant", "use-thermometer"]
    t = time.perf_counter()
    # The same jar file as ours when the script passes it (SCIENCEWORLD_JAR), else the package's.
    env = ScienceWorldEnv("", serverPath=os.environ.get("SCIENCEWORLD_JAR") or None, envStepLimit=100)
    startup = time.perf_counter() - t
    steps = 0
    step_time = 0.0
    resets = 0
    reset_time = 0.0
    for task in tasks:
        env.load(task, 0, "easy", generateGoldPath=True)
        variation = env.get_variations_train()[0]
        env.load(task, variation, "easy", generateGoldPath=True)
        gold = env.get_gold_action_sequence()
        for _ in range(repeats):
            t = time.perf_counter()
            env.reset()
            reset_time += time.perf_counter() - t
            resets += 1
            t = time.perf_counter()
            done = False
            for a in gold:
                _obs, _reward, done, info = env.step(a)
                steps += 1
                if done:
                    break
            step_time += time.perf_counter() - t
            assert done and info["score"] == 100, (task, info["score"])
    env.close()
    sps = steps / step_time
    print(
        f"theirs: start-up {startup:.2f} s; {steps} gold-path steps in {step_time:.2f} s = "
        f"{sps:.1f} steps/s ({1e3 / sps:.2f} ms/step); {resets} resets, "
        f"{1e3 * reset_time / resets:.1f} ms each"
    )
    print(f"RESULT theirs_steps_per_s {sps:.3f}")
    print(f"RESULT theirs_restart_ms {1e3 * reset_time / resets:.3f}")
    print(f"RESULT theirs_startup_s {startup:.3f}")


if __name__ == "__main__":
    main()
