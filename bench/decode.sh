#!/usr/bin/env bash
# Side-by-side decode throughput: quester's batched generation (32 sequences x 128 new tokens,
# release build) vs llama.cpp (llama-cpp-python, same GGUF, the 32 decoded one after another).
# Usage: bench/decode.sh [N=32] [M=128]
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-32}"; M="${2:-128}"
GGUF="${QUESTER_HOME:-$HOME/.cache/quester}/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -x bench/.venv-llamacpp/bin/python ]; then
  python3 -m venv bench/.venv-llamacpp
  bench/.venv-llamacpp/bin/pip install -q llama-cpp-python==0.3.36
fi
cargo build -q --release -p quester-model --example bench_decode
BIN="${CARGO_TARGET_DIR:-target}/release/examples/bench_decode"
# Peak RSS of each process from GNU time (KiB), printed after its throughput line.
mem() { /usr/bin/time -f "peak_rss_mb=%M" -o "$1" "${@:2}"; }
ours=$(mem /tmp/decode_ours.mem "$BIN" "$N" "$M" | tee -a /dev/stderr)
theirs=$(mem /tmp/decode_theirs.mem bench/.venv-llamacpp/bin/python bench/decode_llamacpp.py "$GGUF" "$N" "$M" "$(nproc)" | tee -a /dev/stderr)
for f in ours theirs; do
  kb=$(sed -n 's/peak_rss_mb=//p' "/tmp/decode_$f.mem")
  echo "$f peak RSS: $((kb / 1024)) MB"
done
a=$(echo "$ours" | sed -E 's/.*= ([0-9.]+) tok\/s.*/\1/')
b=$(echo "$theirs" | sed -E 's/.*= ([0-9.]+) tok\/s.*/\1/')
python3 -c "print(f'ratio quester / llama.cpp = {$a / $b:.2f}')"
