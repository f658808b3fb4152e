#!/usr/bin/env bash
# The main job's training steps, two binaries side by side, alternating (this machine's speed
# drifts, so only the ratio within one run means anything):
#   OLD=/path/to/old/quester NEW=target/release/quester bench/main_job_step.sh [STEPS] [ROUNDS]
# Prints per run the summed rollout and training seconds of STEPS steps of $CONFIG
# (default configs/lamer_sokoban_cpu.toml; the README's main job trains
# configs/lamer_bandit_cpu.toml) without evaluation, then the new/old ratios. OLD_SET / NEW_SET
# add one `--set` override to a side, e.g. the same binary twice with
# NEW_SET=model.precision=bf16 to time bf16 against f32. A binary older than layered presets
# (`extends`) reads a flat file: OLD_CONFIG=<a run's config.resolved.toml> for its side.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-2}
ROUNDS=${2:-2}
: "${OLD:?set OLD to the old quester binary}"
NEW=${NEW:-target/release/quester}
CONFIG=${CONFIG:-configs/lamer_sokoban_cpu.toml}
OLD_CONFIG=${OLD_CONFIG:-$CONFIG}
out=$(mktemp -d)
sum() { python3 -c "
import json,sys
rows=[json.loads(l) for l in open('$1/metrics.jsonl') if '\"train\"' in l]
print(sum(r['time_rollout_s'] for r in rows), sum(r['time_training_s'] for r in rows), rows[-1]['loss'])"; }
declare -A R T
for i in $(seq 1 "$ROUNDS"); do
  for which in old new; do
    bin=$OLD; cfg=$OLD_CONFIG; extra=${OLD_SET:-}
    [ $which = new ] && { bin=$NEW; cfg=$CONFIG; extra=${NEW_SET:-}; }
    d=$out/$which-$i
    "$bin" train --config "$cfg" --set training.steps="$STEPS" ${extra:+--set "$extra"} \
      --set eval.at_start=false --set eval.at_end=false --set output.progress=false \
      --run-dir "$d" >/dev/null 2>&1 || { echo "$which binary failed" >&2; exit 1; }
    read -r r t l <<<"$(sum "$d")"
    echo "$which round $i: rollout ${r}s training ${t}s last loss $l"
    R[$which]=$(python3 -c "print(${R[$which]:-0} + $r)"); T[$which]=$(python3 -c "print(${T[$which]:-0} + $t)")
  done
done
python3 -c "print(f'new/old time: rollout {${R[new]}/${R[old]}:.3f}, training {${T[new]}/${T[old]}:.3f}')"
rm -rf "$out"
