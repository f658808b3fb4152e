#!/usr/bin/env python3
"""The table of one warm start: untrained, warm-started and expert on the same held-out tasks.

Reads the evaluated trials (trajectories.jsonl) of runs/warm_start/ENV/{untrained,sft,expert}
(written by quester evaluate and quester sft) and prints, per row, over the first attempt of each
held-out task: success (won), not lost (reward >= 0: a draw or a win in the games), the invalid-
action rate over play turns and the mean reward, each with a 95% percentile-bootstrap interval
over tasks (2000 resamples, seed 0); success within all attempts (pass@k); and the warm start's
gain in success and in invalid rate over the untrained model, paired on the same tasks.
    python3 scripts/warm_start_results.py runs/warm_start/tictactoe
"""
import json
import random
import sys

ROWS = [("untrained", "untrained"), ("warm start", "sft"), ("expert", "expert")]


def trials(path):
    """Per task seed, the list of its evaluated trials' attempts."""
    out = {}
    with open(path) as f:
        for line in f:
            t = json.loads(line)
            if t.get("phase") != "eval":
                continue
            out.setdefault(t["task_seed"], []).append(t["attempts"])
    return out


def stats(groups):
    firsts = [a[0] for g in groups for a in g]
    n = len(firsts)
    turns = sum(a["turns"] for a in firsts)
    return {
        "success": sum(a["won"] for a in firsts) / n,
        "not_lost": sum(a["reward_sum"] >= 0 for a in firsts) / n,
        "invalid": sum(a["invalid"] for a in firsts) / max(turns, 1),
        "reward": sum(a["reward_sum"] for a in firsts) / n,
        "passk": sum(any(x["won"] for x in a) for g in groups for a in g) / n,
    }


def boot(seeds, fn, n=2000):
    rng = random.Random(0)
    xs = sorted(fn([rng.choice(seeds) for _ in seeds]) for _ in range(n))
    return xs[int(0.025 * n)], xs[int(0.975 * n) - 1]


def main():
    d = sys.argv[1]
    data = {name: trials(f"{d}/{sub}/trajectories.jsonl") for name, sub in ROWS}
    seeds = sorted(data["untrained"])
    k = max(len(a) for g in data["untrained"].values() for a in g)
    print(f"{len(seeds)} held-out tasks, first attempt of each (pass@{k}: within {k} attempts)\n")
    keys = [("success", "success"), ("not_lost", "not lost"), ("invalid", "invalid actions"), ("reward", "mean reward")]
    print("| model | " + " | ".join(h for _, h in keys) + f" | pass@{k} |")
    print("| --- " * (len(keys) + 2) + "|")
    for name, _ in ROWS:
        ts = data[name]
        s = stats([ts[x] for x in seeds])
        cells = []
        for key, _ in keys + [("passk", "")]:
            lo, hi = boot(seeds, lambda sample: stats([ts[x] for x in sample])[key])
            cells.append(f"{s[key]:.3f} [{lo:.3f}, {hi:.3f}]")
        print(f"| {name} | " + " | ".join(cells) + " |")
    u, w = data["untrained"], data["warm start"]
    print()
    for key, label in [("success", "success"), ("not_lost", "not lost"), ("invalid", "invalid rate")]:
        diff = lambda sample: stats([w[x] for x in sample])[key] - stats([u[x] for x in sample])[key]
        lo, hi = boot(seeds, diff)
        print(f"warm start - untrained, {label}: {diff(seeds):+.3f} [{lo:+.3f}, {hi:+.3f}] (paired over tasks)")


if __name__ == "__main__":
    main()
