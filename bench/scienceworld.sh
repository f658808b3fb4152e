#!/usr/bin/env bash
# ScienceWorld env speed, ours (Rust, py4j spoken directly) vs the `scienceworld` Python package
# (py4j's Python client), in one run, over the same jar and the same action sequences: the gold
# paths of a few tasks (variation 0 of train, "easy"), each replayed REPEATS times.
#   bench/scienceworld.sh [REPEATS=10] [TASK...]
# Needs Java, and Python 3 with venv and PyPI access (scienceworld==1.2.3 into
# bench/.venv-sciworld, not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-10}
shift || true
TASKS=("$@")
if [ ${#TASKS[@]} -eq 0 ]; then
    TASKS=(find-non-living-thing find-animal find-plant use-thermometer)
fi
VENV=bench/.venv-sciworld
TARGET=${CARGO_TARGET_DIR:-target}

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q scienceworld==1.2.3

cargo build -q --release -p quester-envs --example bench_scienceworld
JAR="${QUESTER_HOME:-$HOME/.cache/quester}/data/scienceworld-1.2.3.jar"
OUT=$(mktemp)
echo "== ours (Rust, release; java $(java -version 2>&1 | head -1)) =="
"$TARGET/release/examples/bench_scienceworld" "$REPEATS" "${TASKS[@]}" | tee -a "$OUT" | grep -v '^RESULT'
echo "== theirs (Python $("$VENV/bin/python" -c 'import sys; print(sys.version.split()[0])'), scienceworld $("$VENV/bin/pip" show scienceworld | awk '/^Version/{print $2}'), py4j $("$VENV/bin/pip" show py4j | awk '/^Version/{print $2}')) =="
SCIENCEWORLD_JAR="$JAR" "$VENV/bin/python" bench/scienceworld_reference.py "$REPEATS" "${TASKS[@]}" | tee -a "$OUT" | grep -v '^RESULT'
echo "== ratios (ours / theirs) =="
awk '/^RESULT/ { v[$2] = $3 }
END {
    printf "steps/s, same work per step (valid actions fetched): %.2fx (%.1f vs %.1f)\n", v["ours_steps_per_s"] / v["theirs_steps_per_s"], v["ours_steps_per_s"], v["theirs_steps_per_s"]
    printf "steps/s, ours without the valid-action list: %.2fx (%.1f vs %.1f)\n", v["ours_lean_steps_per_s"] / v["theirs_steps_per_s"], v["ours_lean_steps_per_s"], v["theirs_steps_per_s"]
    printf "restart (load + look around) vs reset: %.2fx faster (%.1f ms vs %.1f ms)\n", v["theirs_restart_ms"] / v["ours_restart_ms"], v["ours_restart_ms"], v["theirs_restart_ms"]
    printf "start-up: %.2f s vs %.2f s\n", v["ours_startup_s"], v["theirs_startup_s"]
}' "$OUT"
rm -f "$OUT"
