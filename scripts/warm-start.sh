#!/usr/bin/env bash
# The warm start of one env, end to end, with the measurements docs/results/warm-start.md reports:
#   scripts/warm-start.sh ENV [EPISODES] [EPSILON]
# 1. expert demonstrations on training tasks (quester demos, the prompts of configs/sft_ENV_cpu.toml),
# 2. supervised fine-tuning on them (quester sft; its eval.json: the warm-started model on held-out tasks),
# 3. the untrained model and the expert on the same held-out tasks (quester evaluate).
# Outputs under runs/warm_start/ENV/; the wall time of each step is printed and kept in times.txt.
# QUESTER (default target/release/quester) names the binary; extra args after EPSILON go to quester sft.
set -euo pipefail
env=${1:?usage: scripts/warm-start.sh ENV [EPISODES] [EPSILON] [--set ...]}
episodes=${2:-300}
epsilon=${3:-0.1}
shift $(( $# < 3 ? $# : 3 ))
q=${QUESTER:-target/release/quester}
cfg=configs/sft_${env}_cpu.toml
out=runs/warm_start/$env
mkdir -p "$out" data/demos
times=$out/times.txt
: > "$times"
step() {
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name: $*" >&2
  "$@"
  echo "$name $(( SECONDS - t0 ))s" | tee -a "$times" >&2
}
step demos "$q" demos "$env" --config "$cfg" --episodes "$episodes" --epsilon "$epsilon" \
  --out "data/demos/$env.jsonl" > "$out/demos.json"
rm -rf "$out/sft"
step sft "$q" sft --config "$cfg" --run-dir "$out/sft" "$@" > "$out/sft.json"
step untrained "$q" evaluate --config "$cfg" --out "$out/untrained" > /dev/null
step expert "$q" evaluate --config "$cfg" --expert --out "$out/expert" > /dev/null
python3 scripts/warm_start_results.py "$out" | tee "$out/table.md"
