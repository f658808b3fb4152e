#!/usr/bin/env bash
# The device check on a machine with an NVIDIA GPU and nothing but the binary built by
# scripts/build-cuda.sh (no network, no Rust toolchain, no model files):
#
#   scripts/gpu-check.sh [BINARY] [REPORT]  # defaults: dist/quester-cuda(.gz), gpu-check.json
#
# It finds the CUDA libraries the binary loads (cuBLAS, cuRAND and the CUDA runtime, which
# PyTorch's and CuPy's wheels carry; libcuda comes with the driver), prints the GPU, and runs
# `quester gpu-check` under a limit of 8 minutes: parity of small random Llama and Qwen3 models
# with the CPU path, then a LoRA step, a full step and batched decoding on a model of Qwen3-4B's
# shape. The report (JSON) is rewritten after each part, so a run cut short keeps what it
# measured. Exit status: 0 when every parity figure is within its limit and nothing failed.
#
# Environment: GPU_CHECK_LIMIT_S (default 470), GPU_CHECK_ARGS (extra `gpu-check` flags, e.g.
# "--full 2x512" or "--skip-perf").
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-dist/quester-cuda}
REPORT=${2:-gpu-check.json}
LIMIT=${GPU_CHECK_LIMIT_S:-470}
start=$(date +%s)
log() { echo "[gpu-check $(($(date +%s) - start))s] $*" >&2; }

if [[ ! -e $BIN && -f $BIN.gz ]]; then BIN=$BIN.gz; fi
if [[ $BIN == *.gz ]]; then
  unpacked=$(mktemp /tmp/quester-cuda.XXXXXX)
  gzip -dc "$BIN" >"$unpacked" && chmod +x "$unpacked" || { log "error: cannot unpack $BIN"; exit 2; }
  log "unpacked $BIN"
  BIN=$unpacked
fi
[[ -x $BIN ]] || { log "error: $BIN is not an executable (build it with scripts/build-cuda.sh)"; exit 2; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2

# Folders that may hold the libraries, most specific first.
roots=("${CUDA_HOME:-}" /usr/local/cuda /usr/local/nvidia)
for py in python3 /opt/*/.venv/bin/python3; do
  command -v "$py" >/dev/null 2>&1 || continue
  while read -r d; do roots+=("$d"); done < <("$py" -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
done
roots+=(/opt /usr/lib /usr/lib64)
lib_dirs=()
for lib in $(ldd "$BIN" | awk '/not found/ {print $1}'); do
  found=""
  for root in "${roots[@]}"; do
    [[ -n $root && -d $root ]] || continue
    found=$(find "$root" -name "$lib" \( -type f -o -type l \) -print -quit 2>/dev/null)
    [[ -n $found ]] && break
  done
  if [[ -z $found ]]; then
    log "error: $lib, which $BIN needs, is on no library path and in none of: ${roots[*]}"
    exit 2
  fi
  dir=$(dirname "$found")
  [[ " ${lib_dirs[*]} " == *" $dir "* ]] || lib_dirs+=("$dir")
  log "$lib: $found"
done
if ((${#lib_dirs[@]})); then
  export LD_LIBRARY_PATH="$(IFS=:; echo "${lib_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

log "running $BIN gpu-check (limit ${LIMIT}s) -> $REPORT"
# shellcheck disable=SC2086
timeout --kill-after=10 "$LIMIT" "$BIN" gpu-check --device cuda --out "$REPORT" ${GPU_CHECK_ARGS:-}
rc=$?
if ((rc == 124 || rc == 137)); then
  log "stopped at the ${LIMIT}s limit; $REPORT holds the parts that finished"
fi
[[ -f $REPORT ]] && log "report: $REPORT ($(wc -c <"$REPORT") bytes)"
log "exit status $rc"
exit $rc
