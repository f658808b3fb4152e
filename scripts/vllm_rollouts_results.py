#!/usr/bin/env python3
"""The tables of docs/results/vllm-rollouts.md, from the runs of scripts/vllm_rollouts_runs.sh.

Per training step of each run (native engine, vLLM, vLLM with TIS, vLLM with TIS sampled one
update ahead): the updates its rollouts' weights were behind, the training reward and
invalid rate, the sampler / trainer gap (mean |d log p| and k3 KL over every sampled token), the
TIS weights' mean and truncated share, and the step's time split. Then the held-out evaluation of
every policy on the native engine: pass@1..3 with 95% percentile-bootstrap intervals over tasks
(2000 resamples, seed 0), and each trained policy's pass@3 gain over the untrained model, paired
on the same tasks.
    python3 scripts/vllm_rollouts_results.py runs/vllm-rollouts
"""
import json
import random
import sys

RUNS = ["native", "vllm", "vllm-tis", "vllm-ahead"]


def rows(path):
    with open(path) as f:
        return [r for r in map(json.loads, f) if r.get("kind") == "train"]


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def tasks(path):
    with open(path) as f:
        return {t["task_seed"]: t for t in map(json.loads, f)}


def solved_within(t, k):
    return float(any(a > 0 for a in t["solved_by"][:k]))


def boot(values, n=2000):
    rng = random.Random(0)
    m = len(values)
    xs = sorted(sum(rng.choice(values) for _ in range(m)) / m for _ in range(n))
    return xs[int(0.025 * n)], xs[int(0.975 * n) - 1]


def main():
    d = sys.argv[1]
    print("### Training, step by step\n")
    print(
        "| run | step | lag | reward | invalid | gap mean abs d log p | KL(sampler, trainer) "
        "| TIS weight mean | TIS truncated | rollout s | of which weight sync s | update s |"
    )
    print("| --- " * 12 + "|")
    for run in RUNS:
        for r in rows(f"{d}/{run}/metrics.jsonl"):
            print(
                f"| {run} | {r['step']} | {r.get('rollout_staleness', 0)} "
                f"| {r['reward_mean']:.3f} | {r['invalid_rate']:.3f} "
                f"| {fmt(r.get('sampler_logp_gap'), '.2e')} | {fmt(r.get('sampler_kl'), '.2e')} "
                f"| {fmt(r.get('tis_weight_mean'), '.6f')} "
                f"| {fmt(r.get('tis_truncated_fraction'), '.4f')} "
                f"| {r['time_rollout_s']:.1f} | {fmt(r.get('time_weight_sync_s'), '.2f')} "
                f"| {r['time_training_s']:.1f} |"
            )
    print("\n### Held-out evaluation on the native engine\n")
    evals = {name: tasks(f"{d}/eval-{name}/eval_tasks.jsonl") for name in ["untrained"] + RUNS}
    seeds = sorted(evals["untrained"])
    print(f"{len(seeds)} held-out bandits, the preset's evaluation sampling, the same streams.\n")
    print("| policy | pass@1 | pass@2 | pass@3 | pass@3 gain over untrained |")
    print("| --- " * 5 + "|")
    for name, ts in evals.items():
        cells = []
        for k in (1, 2, 3):
            vals = [solved_within(ts[s], k) for s in seeds]
            lo, hi = boot(vals)
            cells.append(f"{sum(vals) / len(vals):.3f} [{lo:.3f}, {hi:.3f}]")
        if name == "untrained":
            gain = "-"
        else:
            diffs = [solved_within(ts[s], 3) - solved_within(evals["untrained"][s], 3) for s in seeds]
            lo, hi = boot(diffs)
            gain = f"{sum(diffs) / len(diffs):+.3f} [{lo:+.3f}, {hi:+.3f}]"
        print(f"| {name} | " + " | ".join(cells) + f" | {gain} |")


if __name__ == "__main__":
    main()
