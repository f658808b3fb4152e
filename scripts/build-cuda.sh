#!/usr/bin/env bash
# Build the `quester` binary with the CUDA feature on a machine without a CUDA
# install (and without a GPU): NVIDIA's compiler, headers and libraries come
# from their PyPI wheels.
#
#   scripts/build-cuda.sh    # -> dist/quester-cuda (stripped) and dist/quester-cuda.gz (to carry)
#
# Environment:
#   CUDA_COMPUTE_CAP   GPU architecture the kernels are compiled for (default 90: H100/H200)
#   QUESTER_CUDA_DIR   where the wheels are installed (default .cuda-toolkit, git-ignored)
#   CARGO_TARGET_DIR   build folder (default target-cuda, apart from the CPU build's target/)
#
# The wheels are pinned to CUDA 13.0, which driver 580 (the H200 machines) runs; a newer
# toolkit than the driver would build kernels the driver refuses to load.
#
# The binary links the CUDA libraries dynamically. Linking needs the driver's libcuda.so,
# which no wheel ships (it comes with the driver), so a stub with the same symbols and
# soname is made from cudarc's bindings; at run time the driver's real library is used.
# cuBLAS, cuRAND and the CUDA runtime must be found at run time: scripts/gpu-check.sh looks
# for them (PyTorch's wheels carry them) and sets LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
start=$(date +%s)
log() { echo "[build-cuda $(($(date +%s) - start))s] $*"; }

CUDA_DIR=${QUESTER_CUDA_DIR:-$ROOT/.cuda-toolkit}
export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target-cuda}
WHEELS=(
  nvidia-cuda-nvcc==13.0.88
  nvidia-cuda-crt==13.0.88
  nvidia-nvvm==13.0.88
  nvidia-cuda-runtime==13.0.96
  nvidia-cuda-nvrtc==13.0.88
  nvidia-cuda-cccl==13.0.85
  nvidia-cublas==13.0.2.14
  nvidia-curand==10.4.0.35
)
STAMP="$CUDA_DIR/.installed-$(echo "${WHEELS[*]}" | md5sum | cut -c1-12)"

# 1. The toolkit from the wheels, in one pip call: `pip --target` skips a package whose
#    top-level folder (here `nvidia/`) already exists, so they cannot be added one by one.
if [[ ! -f $STAMP ]]; then
  log "installing CUDA 13.0 wheels into $CUDA_DIR (about 1.1 GB)"
  rm -rf "$CUDA_DIR"
  mkdir -p "$CUDA_DIR"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$CUDA_DIR/site" "${WHEELS[@]}"
  touch "$STAMP"
fi
export CUDA_HOME="$CUDA_DIR/site/nvidia/cu13"
for tool in nvcc ptxas fatbinary; do
  [[ -x $CUDA_HOME/bin/$tool ]] || { echo "error: $CUDA_HOME/bin/$tool is missing; remove $CUDA_DIR and rerun" >&2; exit 1; }
done
export PATH="$CUDA_HOME/bin:$PATH"
log "$(nvcc --version | tail -2 | head -1)"

# 2. The unversioned names the linker looks for (the wheels ship only libfoo.so.N).
for lib in "$CUDA_HOME"/lib/lib*.so.*; do
  base=${lib##*/}
  ln -sf "$base" "$CUDA_HOME/lib/${base%%.so.*}.so"
done

# 3. A stub libcuda.so: every driver function cudarc declares, with the driver's soname.
CUDARC=$(cargo metadata --format-version 1 --features quester-model/cuda 2>/dev/null |
  python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="cudarc").rsplit("/",1)[0])')
mkdir -p "$CUDA_HOME/lib/stubs"
grep -oE '^ +fn cu[A-Za-z0-9_]+\(' "$CUDARC/src/driver/sys/mod.rs" | sed -E 's/ +fn ([A-Za-z0-9_]+)\(/void \1(void) {}/' |
  sort -u >"$CUDA_HOME/lib/stubs/libcuda_stub.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$CUDA_HOME/lib/stubs/libcuda.so" "$CUDA_HOME/lib/stubs/libcuda_stub.c"
log "stub libcuda.so with $(wc -l <"$CUDA_HOME/lib/stubs/libcuda_stub.c") driver functions"

# 4. The build. candle's kernels are compiled by nvcc in its build script (the slow part).
log "cargo build --release --features quester-model/cuda (compute capability $CUDA_COMPUTE_CAP) into $CARGO_TARGET_DIR"
cargo build --release --locked -p quester-cli --features quester-model/cuda
mkdir -p dist
strip -o dist/quester-cuda "$CARGO_TARGET_DIR/release/quester"
# Stripped, the binary is about 77 MB: 33 MB of it are candle's quantized-matmul GPU code for
# sm_90 and 22 MB the PTX of its other kernels. Compressed it is about 23 MB, which travels to a
# GPU machine with room to spare; scripts/gpu-check.sh unpacks it.
gzip -9 -c dist/quester-cuda >dist/quester-cuda.gz
log "built dist/quester-cuda ($(du -h dist/quester-cuda | cut -f1) stripped) and dist/quester-cuda.gz ($(du -h dist/quester-cuda.gz | cut -f1)); it loads at run time:"
ldd dist/quester-cuda | grep -E 'cuda|cublas|curand|nvrtc|cudart' | sed 's/^/  /' || true
log "done in $(($(date +%s) - start)) s"
