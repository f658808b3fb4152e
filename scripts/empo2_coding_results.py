#!/usr/bin/env python3
"""Aggregates the EMPO2 vs GRPO coding runs of docs/results/empo2-cpu.md.

Reads runs/empo2-coding/{empo2,grpo}-s0 (training) and eval-{empo2,grpo}-s0 (the trained
checkpoints on the 22 held-out problems, 8 samples each), and the untrained model's evaluation
runs/sge-coding/eval-base-grpo (the same config and streams); prints pass@k with 95% bootstrap
intervals over problems, the paired differences on the same problems, and the training curves
(reward, invalid rate, distinct outcomes, EMPO2's mode and memory). The estimator and the
bootstrap are scripts/sge_coding_results.py's.
Usage: scripts/empo2_coding_results.py [RUNS_DIR] [BASE_DIR]
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import sge_coding_results as common  # noqa: E402

RUNS = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/empo2-coding")
BASE = Path(sys.argv[2] if len(sys.argv) > 2 else "runs/sge-coding")


def main():
    common.RUNS = RUNS
    loaded = {
        "EMPO2 trained": common.load("eval-empo2-s0"),
        "GRPO trained": common.load("eval-grpo-s0"),
    }
    common.RUNS = BASE
    loaded = {"untrained": common.load("eval-base-grpo"), **loaded}
    loaded = {k: v for k, v in loaded.items() if v is not None}
    tasks = sorted(set.intersection(*(set(v[0]) for v in loaded.values())))
    curves = {label: common.curve(v[0], tasks) for label, v in loaded.items()}
    samples = sorted({v[0][t][0] for v in loaded.values() for t in tasks})
    print(f"{len(tasks)} held-out problems, samples per problem: {samples}")
    ks = common.KS
    print("| | " + " | ".join(f"pass@{k}" for k in ks) + " | invalid |")
    print("|---|" + "---|" * (len(ks) + 1))
    for label, c in curves.items():
        cells = " | ".join(common.fmt(common.boot(c[k])) for k in ks)
        print(f"| {label} | {cells} | {loaded[label][1]:.3f} |")
    for a, b in [("EMPO2 trained", "untrained"), ("GRPO trained", "untrained"),
                 ("EMPO2 trained", "GRPO trained")]:
        if a in curves and b in curves:
            cells = " | ".join(
                common.fmt(common.boot([x - y for x, y in zip(curves[a][k], curves[b][k])]))
                for k in ks
            )
            print(f"| {a} - {b} | {cells} | |")
    for method in ["empo2", "grpo"]:
        p = RUNS / f"{method}-s0" / "metrics.jsonl"
        if not p.exists():
            continue
        rows = [json.loads(l) for l in p.open()]
        rows = [r for r in rows if r.get("kind") == "train"]
        keys = ["reward_mean", "invalid_rate", "distinct_outcomes", "new_outcomes"]
        if method == "empo2":
            keys += ["empo2/retrieved_mean", "empo2/tip_free_samples", "empo2/memory_entries"]
        print(f"\n{method} training ({len(rows)} steps)")
        if method == "empo2":
            print("  mode                   " + " ".join(r["empo2/mode"] for r in rows))
        for k in keys:
            vals = " ".join(f"{r.get(k, float('nan')):.2f}" for r in rows)
            print(f"  {k:22s} {vals}")
        secs = sum(r.get("time_step_s", 0.0) for r in rows)
        extra = sum(r.get("time_extra_passes_s", 0.0) for r in rows)
        print(f"  wall time {secs:.0f} s (extra passes: tips and keys {extra:.0f} s)")


if __name__ == "__main__":
    main()
