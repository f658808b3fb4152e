#!/usr/bin/env python3
"""Aggregates the HeRL vs GRPO runs of docs/results/herl-instruction-cpu.md.

Reads, under RUNS_DIR (default runs/herl-instruction):
  ifeval-{base,herl,grpo}/per_prompt.jsonl   (quester evaluate ifeval)
  eval-{base,herl,grpo}/trajectories.jsonl   (quester evaluate --out, held-out env tasks)
  {herl,grpo}/metrics.jsonl                  (the training runs)
and prints IFEval's four scores with 95% bootstrap intervals over prompts (instructions for
instruction-level), the paired differences trained - base and HeRL - GRPO on the same prompts,
the held-out env reward and all-constraints-met rate with the same intervals over tasks, and
the training reward of the first and last four steps.
Usage: scripts/herl_instruction_results.py [RUNS_DIR]
"""
import json
import random
import sys
from pathlib import Path

RUNS = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/herl-instruction")
NAMES = ["base", "herl", "grpo"]
B = 2000


def boot(values, paired=None, seed=0):
    """Mean and 95% percentile interval; with `paired`, of the per-item differences."""
    xs = values if paired is None else [a - b for a, b in zip(values, paired)]
    rng = random.Random(seed)
    n = len(xs)
    means = sorted(sum(xs[rng.randrange(n)] for _ in range(n)) / n for _ in range(B))
    return sum(xs) / n, means[int(0.025 * B)], means[int(0.975 * B) - 1]


def fmt(m, lo, hi, scale=100.0):
    return f"{scale * m:6.2f} [{scale * lo:6.2f}, {scale * hi:6.2f}]"


def ifeval(name):
    p = RUNS / f"ifeval-{name}" / "per_prompt.jsonl"
    if not p.exists():
        return None
    rows = [json.loads(l) for l in p.open()]
    out = {}
    for mode in ["strict", "loose"]:
        out[f"prompt_{mode}"] = [1.0 if all(r[mode]) else 0.0 for r in rows]
        out[f"inst_{mode}"] = [1.0 if x else 0.0 for r in rows for x in r[mode]]
    return out


def held_out(name):
    p = RUNS / f"eval-{name}" / "trajectories.jsonl"
    if not p.exists():
        return None
    rows = [json.loads(l) for l in p.open()]
    rows.sort(key=lambda r: r["task_seed"])
    return {
        "reward": [r["attempts"][0]["reward_sum"] for r in rows],
        "all_met": [1.0 if r["attempts"][0]["won"] else 0.0 for r in rows],
    }


def table(title, data, keys):
    print(f"\n## {title}")
    have = [n for n in NAMES if data[n] is not None]
    for k in keys:
        print(f"\n{k}")
        for n in have:
            print(f"  {n:5s} {fmt(*boot(data[n][k]))}")
        for a, b in [("herl", "base"), ("grpo", "base"), ("herl", "grpo")]:
            if a in have and b in have:
                print(f"  {a}-{b} {fmt(*boot(data[a][k], data[b][k]))}")


def main():
    print(f"runs: {RUNS}; 95% bootstrap intervals ({B} resamples), x100")
    ife = {n: ifeval(n) for n in NAMES}
    table(
        "IFEval (per prompt / per instruction)",
        ife,
        ["prompt_strict", "inst_strict", "prompt_loose", "inst_loose"],
    )
    for n in NAMES:
        if ife[n]:
            ps, is_ = ife[n]["prompt_strict"], ife[n]["inst_strict"]
            avg = 50 * (sum(ps) / len(ps) + sum(is_) / len(is_))
            print(f"  {n}: average of the two strict scores {avg:.1f}")
    table("held-out env tasks (split test)", {n: held_out(n) for n in NAMES}, ["reward", "all_met"])
    print("\n## training reward (the policy's own answers)")
    for m in ["herl", "grpo"]:
        p = RUNS / m / "metrics.jsonl"
        if not p.exists():
            continue
        rows = [json.loads(l) for l in p.open()]
        r = [x["reward_mean"] for x in rows if x.get("kind") == "train"]
        if len(r) >= 8:
            print(f"  {m}: first 4 steps {sum(r[:4]) / 4:.3f}, last 4 steps {sum(r[-4:]) / 4:.3f}, "
                  f"all {len(r)} steps {sum(r) / len(r):.3f}")
        if m == "herl":
            rw = [x.get("herl/rewrites", 0) for x in rows if x.get("kind") == "train"]
            imp = [x.get("herl/improved_frac", 0) * x.get("herl/rewrites", 0)
                   for x in rows if x.get("kind") == "train"]
            print(f"  herl: {sum(rw)} rewrites, {sum(imp):.0f} beat their candidate")


if __name__ == "__main__":
    main()
