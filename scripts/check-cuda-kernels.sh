#!/usr/bin/env bash
# Compiles quester's own CUDA kernels (crates/quester-model/src/cuda/kernels.cu) to PTX with
# NVIDIA's compiler from its PyPI wheels, as the `cuda` feature's build.rs does: a check that
# takes seconds, for CI, which does not build the whole CUDA binary (scripts/build-cuda.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${QUESTER_NVCC_DIR:-${TMPDIR:-/tmp}/quester-nvcc}
if [[ ! -x $DIR/site/nvidia/cu13/bin/nvcc ]]; then
  rm -rf "$DIR"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$DIR/site" nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
    nvidia-cuda-runtime==13.0.96
fi
NVCC=$DIR/site/nvidia/cu13/bin/nvcc
out=$(mktemp -d)
for cap in 80 90; do
  "$NVCC" --ptx -O3 -std=c++17 -arch=compute_$cap -Werror all-warnings \
    crates/quester-model/src/cuda/kernels.cu -o "$out/kernels_$cap.ptx"
done
echo "kernels.cu compiles to PTX for compute 8.0 and 9.0: $(grep -c '^.visible .entry' "$out/kernels_90.ptx") kernels"
rm -rf "$out"
