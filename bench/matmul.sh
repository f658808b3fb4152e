#!/usr/bin/env bash
# The model's products side by side: ours (bench_matmul, release: gemm f32, our packed f32, each
# bf16 kernel with the weights packed once, the best one packed per call) and PyTorch's
# `x @ w.T` on f32 and bf16 tensors, on the same shapes and thread count, then the ratio of our
# best bf16 kernel (weights packed once) to PyTorch bf16. Needs bench/.venv-torch.
# Usage: bench/matmul.sh [REPEATS=5]   (THREADS=2 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-5}
THREADS=${THREADS:-2}
PY=bench/.venv-torch/bin/python
[ -x "$PY" ] || { echo "missing $PY: python3 -m venv bench/.venv-torch && bench/.venv-torch/bin/pip install torch"; exit 1; }
export RAYON_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS THREADS
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "cpu flags: $(grep -o -w -E 'avx512f|avx512_bf16|amx_tile|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
cargo build --release -q -p quester-model --example bench_matmul
OURS=$(mktemp) THEIRS=$(mktemp)
trap 'rm -f "$OURS" "$THEIRS"' EXIT
"${CARGO_TARGET_DIR:-target}/release/examples/bench_matmul" "$REPS" | tee "$OURS"
# PyTorch runs bench_matmul's own shapes (its rows `m x k x n | ...` with GFLOP/s after them).
SHAPES=$(grep -E '^[0-9]+ x [0-9]+ x [0-9]+ \|' "$OURS" | cut -d'|' -f1 | tr -d ' ')
[ -n "$SHAPES" ] || { echo "matmul.sh: bench_matmul printed no products" >&2; exit 1; }
# shellcheck disable=SC2086
"$PY" bench/matmul_torch.py "$REPS" $SHAPES | tee "$THEIRS"
echo "m x k x n | ours bf16 (packed once, best kernel) | torch bf16 | ratio ours/torch"
python3 - "$OURS" "$THEIRS" <<'PY'
import sys
def rows(path):
    out = {}
    for line in open(path):
        cells = [c.strip() for c in line.split("|")]
        if cells and " x " in cells[0] and all(c.replace(".", "").isdigit() for c in cells[1:]):
            out[cells[0]] = [float(c) for c in cells[1:]]
    return out
ours, theirs = rows(sys.argv[1]), rows(sys.argv[2])
if not ours or not theirs:
    sys.exit("matmul.sh: a side printed no results")
for shape, t in theirs.items():
    if shape not in ours:
        sys.exit(f"matmul.sh: no result of ours for {shape}")
    # Ours: gemm, packed f32, then one column per bf16 kernel packed once, then packed per call.
    best = max(ours[shape][2:-1]) if len(ours[shape]) > 3 else ours[shape][1]
    print(f"{shape} | {best:.0f} | {t[1]:.0f} | {best / t[1]:.2f}")
PY
