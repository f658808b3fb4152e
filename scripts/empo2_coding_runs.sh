#!/usr/bin/env bash
# The real-model EMPO2 vs GRPO comparison of docs/results/empo2-cpu.md, on the coding env's
# simple problems (where the default model has a learning signal; on ScienceWorld and WebShop it
# writes no valid action, see the results file). Both runs are grpo_coding_cpu.toml on a pool of
# 8 training problems (each comes back every 2 steps, so the memory has something to retrieve),
# seed 0, the same budget, prompt, sampling and loss; EMPO2 switches the method on, with tips of
# up to 48 tokens and the tip modes raised to 40% off-policy + 30% on-policy with tips (the
# reference's 17% + 8% would give seed 0 two tip steps in 8, both before any task recurs). The
# untrained model's figure is scripts/sge_coding_runs.sh's runs/sge-coding/eval-base-grpo (the
# same evaluation config and streams). Resumable: run it again after a kill.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/quester}
OUT=${OUT:-runs/empo2-coding}
SEED=${SEED:-0}
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
mkdir -p "$OUT"
common=(--set env.train_pool=8 --set output.progress=false --set eval.at_start=false
  --set eval.at_end=false --set training.seed="$SEED")
empo2=(--set algorithm.method=empo2 --set empo2.max_tip_tokens=48
  --set empo2.off_policy_below=0.4 --set empo2.with_tips_below=0.7)
for method in empo2 grpo; do
  dir="$OUT/$method-s$SEED"
  extra=()
  [ "$method" = empo2 ] && extra=("${empo2[@]}")
  if [ -f "$dir/config.resolved.toml" ]; then
    "$BIN" train --resume "$dir" --no-report
  else
    "$BIN" train --config configs/grpo_coding_cpu.toml "${common[@]}" "${extra[@]}" \
      --run-dir "$dir" --no-report
  fi
  [ -f "$OUT/eval-$method-s$SEED/eval.json" ] ||
    "$BIN" evaluate --config configs/grpo_coding_cpu.toml \
      --checkpoint "$dir/checkpoints/latest" --out "$OUT/eval-$method-s$SEED"
done
