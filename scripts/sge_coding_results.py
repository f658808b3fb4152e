#!/usr/bin/env python3
"""Aggregates the SGE vs GRPO coding runs of docs/results/sge-cpu.md.

Reads, under RUNS_DIR (default runs/sge-coding):
  eval-base-{sge,grpo}/trajectories.jsonl   the untrained model under each method's prompt
  eval-{sge,grpo}-s0/trajectories.jsonl     each trained checkpoint, same problems and streams
  {sge,grpo}-s0/metrics.jsonl               the training runs
and prints the unbiased pass@k (k = 1, 2, 4, 8) with 95% bootstrap intervals over problems, the
paired differences (trained - untrained for each method, SGE - GRPO trained) on the same
problems, the invalid-action rate, and the training curves (reward, invalid rate, distinct
outcomes per problem, SGE's missing strategies and reflected share).
Usage: scripts/sge_coding_results.py [RUNS_DIR] [SEED]
"""
import json
import random
import sys
from pathlib import Path

RUNS = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/sge-coding")
SEED = sys.argv[2] if len(sys.argv) > 2 else "0"
KS = [1, 2, 4, 8]
B = 2000


def pass_at_k(n, c, k):
    """Chen et al.'s unbiased estimator, in the product form."""
    if c == 0 or k == 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def load(name):
    p = RUNS / name / "trajectories.jsonl"
    if not p.exists():
        return None
    per_task = {}
    invalid = [0, 0]
    for line in p.open():
        r = json.loads(line)
        won = any(a["won"] for a in r["attempts"])
        n, c = per_task.get(r["task_seed"], (0, 0))
        per_task[r["task_seed"]] = (n + 1, c + int(won))
        for s in r["samples"]:
            if s["kind"] == "play":
                invalid[0] += int(not s["valid"])
                invalid[1] += 1
    return per_task, invalid[0] / max(invalid[1], 1)


def boot(values, seed=0):
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(B))
    return sum(values) / n, means[int(0.025 * B)], means[int(0.975 * B) - 1]


def fmt(t):
    m, lo, hi = t
    return f"{m:.3f} [{lo:.3f}, {hi:.3f}]"


def curve(per_task, tasks):
    return {k: [pass_at_k(*per_task[t], k) for t in tasks] for k in KS}


def main():
    names = {
        "untrained, SGE prompt": f"eval-base-sge",
        "untrained, GRPO prompt": f"eval-base-grpo",
        "SGE trained": f"eval-sge-s{SEED}",
        "GRPO trained": f"eval-grpo-s{SEED}",
    }
    loaded = {label: load(d) for label, d in names.items()}
    loaded = {k: v for k, v in loaded.items() if v is not None}
    tasks = sorted(set.intersection(*(set(v[0]) for v in loaded.values())))
    curves = {label: curve(v[0], tasks) for label, v in loaded.items()}
    n = {label: sorted({v[0][t][0] for t in tasks}) for label, v in loaded.items()}
    print(f"{len(tasks)} held-out problems; samples per problem: {n}")
    print("| | " + " | ".join(f"pass@{k}" for k in KS) + " | invalid |")
    print("|---|" + "---|" * (len(KS) + 1))
    for label, c in curves.items():
        cells = " | ".join(fmt(boot(c[k])) for k in KS)
        print(f"| {label} | {cells} | {loaded[label][1]:.3f} |")
    pairs = [
        ("SGE trained", "untrained, SGE prompt"),
        ("GRPO trained", "untrained, GRPO prompt"),
        ("SGE trained", "GRPO trained"),
        ("SGE trained", "untrained, GRPO prompt"),
    ]
    for a, b in pairs:
        if a in curves and b in curves:
            cells = " | ".join(
                fmt(boot([x - y for x, y in zip(curves[a][k], curves[b][k])])) for k in KS
            )
            print(f"| {a} - {b} | {cells} | |")
    for method in ["sge", "grpo"]:
        p = RUNS / f"{method}-s{SEED}" / "metrics.jsonl"
        if not p.exists():
            continue
        rows = [json.loads(l) for l in p.open()]
        rows = [r for r in rows if r.get("kind") == "train"]
        keys = ["reward_mean", "invalid_rate", "distinct_outcomes", "new_outcomes"]
        if method == "sge":
            keys += ["sge/strategy_missing", "sge/reflected_share"]
        print(f"\n{method} training ({len(rows)} steps)")
        for k in keys:
            vals = " ".join(f"{r.get(k, float('nan')):.2f}" for r in rows)
            print(f"  {k:22s} {vals}")
        secs = sum(r.get("time_step_s", 0.0) for r in rows)
        print(f"  wall time {secs:.0f} s")


if __name__ == "__main__":
    main()
