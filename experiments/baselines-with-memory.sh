#!/usr/bin/env bash
# The GRPO and GiGPO checkpoints of experiments/lamer-vs-rl-bandit.toml evaluated the way LaMer
# is (3 attempts, the earlier attempts in the prompt), on the same 64 bandits and streams:
# does a single-episode learner use the memory it was never trained with?
#   experiments/baselines-with-memory.sh [EXPERIMENT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
exp="${1:-runs/experiments/lamer-vs-rl-bandit}"
bin="${QUESTER_BIN:-target/release/quester}"
for run in grpo gigpo; do
  for d in "$exp/$run"/seed-*; do
    out="$d/eval-memory"
    if [ ! -f "$out/eval.json" ]; then
      "$bin" evaluate --config configs/lamer_bandit_cpu.toml --set eval.seed=0 \
        --checkpoint "$d/train/checkpoints/latest" --out "$out" >/dev/null
    fi
    printf '%s %s: ' "$run" "$(basename "$d")"
    python3 -c 'import json,sys; print(" ".join(f"pass@{k+1} {p:.3f}" for k, p in enumerate(json.load(open(sys.argv[1]))["pass_at"])))' "$out/eval.json"
  done
done
