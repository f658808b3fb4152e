#!/usr/bin/env bash
# The real-model SGE vs GRPO comparison of docs/results/sge-cpu.md: the held-out coding problems
# (split "test", 8 samples each) evaluated with the untrained model under each method's prompt,
# then both CPU presets trained (seed 0, the same pool of 16 training problems and the same
# budget of episodes), then each trained checkpoint evaluated on the same problems and sampling
# streams. Every stage is resumable: run the script again after a kill and it continues (train
# --resume; a finished evaluation, eval.json, is not repeated).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/quester}
OUT=${OUT:-runs/sge-coding}
SEED=${SEED:-0}
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
mkdir -p "$OUT"
# The in-training evaluations are skipped: the separate ones below keep every trial.
common=(--set output.progress=false --set eval.at_start=false --set eval.at_end=false
  --set training.seed="$SEED")
for method in sge grpo; do
  [ -f "$OUT/eval-base-$method/eval.json" ] ||
    "$BIN" evaluate --config "configs/${method}_coding_cpu.toml" --out "$OUT/eval-base-$method"
done
for method in sge grpo; do
  dir="$OUT/$method-s$SEED"
  if [ -f "$dir/config.resolved.toml" ]; then
    "$BIN" train --resume "$dir" --no-report
  else
    "$BIN" train --config "configs/${method}_coding_cpu.toml" "${common[@]}" --run-dir "$dir" --no-report
  fi
  [ -f "$OUT/eval-$method-s$SEED/eval.json" ] ||
    "$BIN" evaluate --config "configs/${method}_coding_cpu.toml" \
      --checkpoint "$dir/checkpoints/latest" --out "$OUT/eval-$method-s$SEED"
done
