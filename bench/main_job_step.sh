#!/usr/bin/env bash
# The main job's training steps, two binaries side by side, alternating (this machine's speed
# drifts, so only the ratio within one run means anything):
#   OLD=/path/to/old/quester NEW=target/release/quester bench/main_job_step.sh [STEPS] [ROUNDS]
# Prints per run the summed rollout and training seconds of STEPS steps of
# configs/lamer_sokoban_cpu.toml (no evaluation), then the new/old ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-2}
ROUNDS=${2:-2}
: "${OLD:?set OLD to the old quester binary}"
NEW=${NEW:-target/release/quester}
out=$(mktemp -d)
sum() { python3 -c "
import json,sys
rows=[json.loads(l) for l in open('$1/metrics.jsonl') if '\"train\"' in l]
print(sum(r['time_rollout_s'] for r in rows), sum(r['time_training_s'] for r in rows), rows[-1]['loss'])"; }
declare -A R T
for i in $(seq 1 "$ROUNDS"); do
  for which in old new; do
    bin=$OLD; [ $which = new ] && bin=$NEW
    d=$out/$which-$i
    "$bin" train --config configs/lamer_sokoban_cpu.toml --set training.steps="$STEPS" \
      --set eval.at_start=false --set eval.at_end=false --set output.progress=false \
      --run-dir "$d" >/dev/null 2>&1 || { echo "$which binary failed" >&2; exit 1; }
    read -r r t l <<<"$(sum "$d")"
    echo "$which round $i: rollout ${r}s training ${t}s last loss $l"
    R[$which]=$(python3 -c "print(${R[$which]:-0} + $r)"); T[$which]=$(python3 -c "print(${T[$which]:-0} + $t)")
  done
done
python3 -c "print(f'new/old time: rollout {${R[new]}/${R[old]}:.3f}, training {${T[new]}/${T[old]}:.3f}')"
rm -rf "$out"
