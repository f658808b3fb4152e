#!/usr/bin/env bash
# LaMer's MineSweeper evaluation (trials of 3 attempts, the earlier attempts in the prompt) with
# the native engine re-prefilling every prompt whole (the anchor), then keeping prompt prefixes
# (`model.prefix_cache_mb`), so that each turn prefills only what its trial's previous prompt
# did not hold. The same tasks, seed and sampling streams; prints each run's seconds, the kept
# prefixes' counts, the ratio, and whether the two runs gave the same answers (they may differ
# by float rounding, which can flip a sampled token).
# Without a MineSweeper warm start the default model answers, held to 12 tokens after the
# forced `<action>` so that prefill dominates as it does for the warm start's short answers.
# Usage: bench/prefix_cache.sh [TASKS=8] [MIB=4096]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/py-venv.sh
TASKS="${1:-8}"
MIB="${2:-4096}"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) threads"
target="$(quester_target)"
cargo build -q --release -p quester-cli
BIN="$target/release/quester"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
init=()
if [ -f runs/warm_start/minesweeper/sft/checkpoints/latest ]; then
  init=(--set model.init=runs/warm_start/minesweeper/sft)
  echo "policy: the MineSweeper warm start"
else
  echo "policy: the default model (no runs/warm_start/minesweeper/sft)"
fi
run() { # NAME MIB
  "$BIN" evaluate --config configs/lamer_minesweeper_cpu.toml "${init[@]}" \
    --set prompt.play_prefix='<action>' --set prompt.reflect_prefix='<remark>' \
    --set algorithm.reflection_type=history_only --set algorithm.do_reflection=false \
    --set model.max_response_tokens=12 --set eval.tasks="$TASKS" --set eval.num_attempts=3 \
    --set eval.temperature=0.7 --set eval.top_p=0.8 --set eval.top_k=20 --set eval.seed=0 \
    --set model.prefix_cache_mb="$2" --out "$TMP/$1" >"$TMP/$1.log" 2>&1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$TMP/$1/eval.json"
}
full=$(run full 0)
kept=$(run kept "$MIB")
echo "tasks: $TASKS x 3 attempts"
echo "whole prompts prefilled: ${full} s"
echo "prompt prefixes kept ($MIB MiB): ${kept} s"
grep -h 'kept prompt prefixes' "$TMP/kept.log" | sed 's/.*kept prompt prefixes/  kept prompt prefixes:/' | tail -1
python3 - "$full" "$kept" "$TMP/full/eval_tasks.jsonl" "$TMP/kept/eval_tasks.jsonl" <<'PY'
import sys
full, kept = float(sys.argv[1]), float(sys.argv[2])
same = open(sys.argv[3]).read() == open(sys.argv[4]).read()
print(f"ratio (whole / kept): {full / kept:.2f}x; the same outcomes on every task: {same}")
PY
