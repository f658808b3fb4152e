#!/usr/bin/env bash
# The real-model HeRL vs GRPO comparison of docs/results/herl-instruction-cpu.md: both CPU presets
# (seed 0, the same budget of answers per step), then IFEval of the untrained model and of each
# trained checkpoint at the same token limit. Every stage is resumable: run the script again after
# a kill and it continues (train --resume; evaluate ifeval continues its partial file).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/quester}
OUT=${OUT:-runs/herl-instruction}
TOKENS=${TOKENS:-256}
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
mkdir -p "$OUT"
for method in herl grpo; do
  dir="$OUT/$method"
  if [ -f "$dir/config.resolved.toml" ]; then
    "$BIN" train --resume "$dir" --no-report
  else
    "$BIN" train --config "configs/${method}_instruction_cpu.toml" --set output.progress=false \
      --run-dir "$dir" --no-report
  fi
done
# A finished evaluation (scores.json) is not repeated.
[ -f "$OUT/ifeval-base/scores.json" ] ||
  "$BIN" evaluate ifeval --max-new-tokens "$TOKENS" --out "$OUT/ifeval-base"
for method in herl grpo; do
  [ -f "$OUT/ifeval-$method/scores.json" ] ||
    "$BIN" evaluate ifeval --max-new-tokens "$TOKENS" \
      --checkpoint "$OUT/$method/checkpoints/latest" --out "$OUT/ifeval-$method"
done
# The held-out env tasks (split "test") of each policy, one trial per task, for intervals over
# tasks (the in-training evaluation logs means only).
for method in base herl grpo; do
  [ -f "$OUT/eval-$method/eval.json" ] && continue
  ckpt=()
  [ "$method" = base ] || ckpt=(--checkpoint "$OUT/$method/checkpoints/latest")
  "$BIN" evaluate --config configs/herl_instruction_cpu.toml --set eval.tasks=96 "${ckpt[@]}" \
    --out "$OUT/eval-$method"
done
