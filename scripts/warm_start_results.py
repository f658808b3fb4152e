#!/usr/bin/env python3
"""The table of one warm start: untrained, warm-started and expert on the same held-out tasks.

Reads runs/warm_start/ENV/{untrained,sft,expert}/eval_tasks.jsonl (written by quester evaluate
and quester sft) and prints, per row, success at attempt 1 (pass@1) and within all attempts
(pass@k), the invalid-action rate and the mean reward, each with a 95% percentile-bootstrap
interval over tasks (2000 resamples, seed 0), and the warm start's pass@1 gain over the untrained
model with a paired bootstrap interval.
    python3 scripts/warm_start_results.py runs/warm_start/tictactoe
"""
import json
import random
import sys

ROWS = [("untrained", "untrained"), ("warm start", "sft"), ("expert", "expert")]


def tasks(path):
    with open(path) as f:
        return {t["task_seed"]: t for t in map(json.loads, f)}


def stats(ts):
    n = sum(t["trials"] for t in ts)
    k = len(ts[0]["solved_by"])
    plays = sum(t["plays"] for t in ts)
    return {
        "pass1": sum(t["solved_by"][0] for t in ts) / n,
        "passk": sum(t["solved_by"][k - 1] for t in ts) / n,
        "invalid": sum(t["invalid"] for t in ts) / max(plays, 1),
        "reward": sum(t["reward_sum"] for t in ts) / max(sum(t["attempts"] for t in ts), 1),
    }


def boot(seeds, fn, n=2000):
    rng = random.Random(0)
    xs = sorted(fn([rng.choice(seeds) for _ in seeds]) for _ in range(n))
    return xs[int(0.025 * n)], xs[int(0.975 * n) - 1]


def main():
    d = sys.argv[1]
    data = {name: tasks(f"{d}/{sub}/eval_tasks.jsonl") for name, sub in ROWS}
    seeds = sorted(data["untrained"])
    k = len(data["untrained"][seeds[0]]["solved_by"])
    print(f"{len(seeds)} held-out tasks; success = won in the first attempt (pass@1) / within {k} independent attempts (pass@{k})\n")
    print(f"| model | pass@1 | pass@{k} | invalid actions | mean reward |")
    print("| --- | --- | --- | --- | --- |")
    for name, _ in ROWS:
        ts = data[name]
        s = stats([ts[x] for x in seeds])
        cells = []
        for key in ["pass1", "passk", "invalid", "reward"]:
            lo, hi = boot(seeds, lambda sample: stats([ts[x] for x in sample])[key])
            cells.append(f"{s[key]:.3f} [{lo:.3f}, {hi:.3f}]")
        print(f"| {name} | " + " | ".join(cells) + " |")
    u, w = data["untrained"], data["warm start"]
    gain = lambda sample: stats([w[x] for x in sample])["pass1"] - stats([u[x] for x in sample])["pass1"]
    lo, hi = boot(seeds, gain)
    print(f"\nwarm start - untrained, pass@1: {gain(seeds):+.3f} [{lo:+.3f}, {hi:+.3f}] (paired bootstrap over tasks)")


if __name__ == "__main__":
    main()
