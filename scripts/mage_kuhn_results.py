#!/usr/bin/env python3
"""Aggregates the MAGE vs GiGPO Kuhn Poker runs of docs/results/mage-kuhn-cpu.md.

Reads runs/kuhn-<method>-s<seed>/eval_<opponent>_<when>/trajectories.jsonl (written by
`quester evaluate --out`, one row per held-out hand) and prints, per method, opponent and
before/after, the mean chips per hand of the trial's final attempt (a won trial is frozen at its
win) and the final-attempt win rate, with 95% bootstrap intervals over seeds and hands, and the
paired difference MAGE - GiGPO on the same hands and sampling streams.
Usage: scripts/mage_kuhn_results.py [RUNS_DIR]
"""
import json
import random
import sys
from pathlib import Path

RUNS = Path(sys.argv[1] if len(sys.argv) > 1 else "runs")
SCALE = 5.0  # reward_scale: reward = 5 x chips
ATTEMPTS = 3


def final(attempts):
    a = attempts[min(ATTEMPTS, len(attempts)) - 1]
    return a["reward_sum"] / SCALE, 1.0 if a["won"] else 0.0


def load(method, seed, tag):
    p = RUNS / f"kuhn-{method}-s{seed}" / f"eval_{tag}" / "trajectories.jsonl"
    if not p.exists():
        return None
    rows = [json.loads(l) for l in p.open()]
    rows.sort(key=lambda r: r["task_seed"])
    return [final(r["attempts"]) for r in rows]


def boot(per_seed, k, n=2000, rng=random.Random(0)):
    """Mean of column k and a 95% interval: resample seeds, then hands within each seed."""
    seeds = [s for s in per_seed if s]
    if not seeds:
        return None
    mean = sum(x[k] for s in seeds for x in s) / sum(len(s) for s in seeds)
    stats = []
    for _ in range(n):
        tot = cnt = 0
        for s in (rng.choice(seeds) for _ in seeds):
            for _ in s:
                tot += rng.choice(s)[k]
                cnt += 1
        stats.append(tot / cnt)
    stats.sort()
    return mean, stats[int(0.025 * n)], stats[int(0.975 * n) - 1]


def fmt(t):
    return "-" if t is None else f"{t[0]:+.3f} [{t[1]:+.3f}, {t[2]:+.3f}]"


def main():
    seeds = sorted({int(p.name.split("-s")[-1]) for p in RUNS.glob("kuhn-*-s*") if p.is_dir()})
    tags = ["cfr", "conservative", "aggressive", "intermediate"]
    print(f"seeds: {seeds}\n")
    print("| opponent | method | chips/hand before | chips/hand after | final win rate before | final win rate after |")
    print("|---|---|---|---|---|---|")
    for tag in tags:
        for m in ["mage", "gigpo"]:
            cells = []
            for k in (0, 1):
                for when in ("before", "after"):
                    cells.append(fmt(boot([load(m, s, f"{tag}_{when}") for s in seeds], k)))
            print(f"| {tag} | {m} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} |")
    print("\nPaired MAGE - GiGPO after training (same hands, same sampling streams):\n")
    print("| opponent | chips/hand difference | final win-rate difference |")
    print("|---|---|---|")
    for tag in tags:
        diffs = []
        for s in seeds:
            a, b = load("mage", s, f"{tag}_after"), load("gigpo", s, f"{tag}_after")
            if a and b:
                diffs.append([(x[0] - y[0], x[1] - y[1]) for x, y in zip(a, b)])
        print(f"| {tag} | {fmt(boot(diffs, 0))} | {fmt(boot(diffs, 1))} |")


if __name__ == "__main__":
    main()
