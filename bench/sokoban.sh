#!/usr/bin/env bash
# Sokoban speed, ours vs the Python reference, in one run (LaMer config: 6x6, 2 boxes, depth 100).
#   bench/sokoban.sh [RUST_ROOMS] [PY_ROOMS] [ENV_STEPS]
# Needs Python 3 with venv and PyPI access (gym-sokoban 0.0.6 + numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
RUST_ROOMS=${1:-5000}
PY_ROOMS=${2:-500}
ENV_STEPS=${3:-200000}
VENV=bench/.venv-sokoban
TARGET=${CARGO_TARGET_DIR:-target}

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
# gym-sokoban pulls in gym (unmaintained; it prints a NumPy 2 warning that does not affect room_utils).
"$VENV/bin/pip" install -q gym-sokoban==0.0.6 numpy

cargo build -q --release -p quester-envs --example bench_sokoban
OUT=$(mktemp)
echo "== ours (Rust, release) =="
"$TARGET/release/examples/bench_sokoban" "$RUST_ROOMS" "$ENV_STEPS" | tee -a "$OUT" | grep -v '^RESULT'
echo "== reference (Python $("$VENV/bin/python" -c 'import sys; print(sys.version.split()[0])'), gym-sokoban $("$VENV/bin/pip" show gym-sokoban | awk '/^Version/{print $2}')) =="
"$VENV/bin/python" -W ignore bench/sokoban_reference.py "$PY_ROOMS" 2>/dev/null | tee -a "$OUT" | grep -v '^RESULT'
echo "== ratios (python / rust) =="
awk '/^RESULT/ { v[$2] = $3 }
END {
    printf "pipeline per room, CPU time: %.0fx (%.1f us vs %.1f us)\n", v["python_pipeline_cpu_us_per_room"] / v["rust_pipeline_cpu_us_per_room"], v["rust_pipeline_cpu_us_per_room"], v["python_pipeline_cpu_us_per_room"]
    printf "pipeline per room, wall time: %.0fx (%.1f us vs %.1f us)\n", v["python_pipeline_us_per_room"] / v["rust_pipeline_us_per_room"], v["rust_pipeline_us_per_room"], v["python_pipeline_us_per_room"]
    printf "generate_room per draw, CPU: %.0fx\n", v["python_generate_us_per_draw"] / v["rust_generate_us_per_draw"]
    printf "optimal-length check per room, CPU: %.0fx\n", v["python_solve_us_per_room"] / v["rust_solve_us_per_room"]
}' "$OUT"
rm -f "$OUT"
