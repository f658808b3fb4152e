#!/usr/bin/env bash
# The real-model EMPO2 vs GRPO comparison of docs/results/empo2-cpu.md, on the coding env's
# simple problems (where the default model has a learning signal; on ScienceWorld and WebShop it
# writes no valid action, see the results file). EMPO2 is grpo_coding_cpu.toml with the method
# switched (same pool of 16 training problems, budget, prompt, sampling and loss; tips of up to 48
# tokens), so the untrained model's figure and the trained GRPO run are scripts/sge_coding_runs.sh's
# (runs/sge-coding/eval-base-grpo, eval-grpo-s0), made with the same evaluation streams. Resumable:
# run it again after a kill.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/quester}
OUT=${OUT:-runs/empo2-coding}
SEED=${SEED:-0}
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
mkdir -p "$OUT"
dir="$OUT/empo2-s$SEED"
if [ -f "$dir/config.resolved.toml" ]; then
  "$BIN" train --resume "$dir" --no-report
else
  "$BIN" train --config configs/grpo_coding_cpu.toml --set algorithm.method=empo2 \
    --set empo2.max_tip_tokens=48 --set output.progress=false --set eval.at_start=false \
    --set eval.at_end=false --set training.seed="$SEED" --run-dir "$dir" --no-report
fi
[ -f "$OUT/eval-empo2-s$SEED/eval.json" ] ||
  "$BIN" evaluate --config configs/grpo_coding_cpu.toml \
    --checkpoint "$dir/checkpoints/latest" --out "$OUT/eval-empo2-s$SEED"
# The untrained model again with this binary: the same figure as runs/sge-coding's shows the
# evaluation streams are the same.
[ -f "$OUT/eval-base/eval.json" ] ||
  "$BIN" evaluate --config configs/grpo_coding_cpu.toml --out "$OUT/eval-base"
