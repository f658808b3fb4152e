#!/usr/bin/env bash
# Side-by-side decode throughput on the same GGUF and the same 32 chat prompts (greedy, 128 new
# tokens each, EOS ignored):
#   quester      batched generation (release build; PRECISION=f32|bf16|auto, default f32)
#   llama.cpp    llama-cpp-python, the prompts decoded one after another (the old anchor)
#   llama-server llama.cpp's server with N parallel slots and continuous batching, all N
#                requests sent at once: llama.cpp's own batched decoding, the stronger anchor
# Each side must exit 0 and print a tok/s figure, else the script stops naming the side.
# Usage: bench/decode.sh [N=32] [M=128]
# SEQUENTIAL=0 skips the one-after-another anchor (and its llama-cpp-python build, ~20 minutes
# of both cores on a fresh machine); llama-server, the stronger anchor, always runs.
# SERVER_ARGS adds flags to llama-server's command line: on session 16's AMX box its weight
# repacking (the AMX path for Q4_1) crashed at start-up, and SERVER_ARGS=--no-repack ran.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-32}"; M="${2:-128}"
PRECISION=${PRECISION:-f32}
SEQUENTIAL=${SEQUENTIAL:-1}
THREADS=$(nproc)
GGUF="${QUESTER_HOME:-$HOME/.cache/quester}/models/SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER=bench/.llamacpp-server/llama-server
# Builds use -march=native: an illegal instruction usually means a binary built for another CPU.
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "cpu flags: $(grep -o -w -E 'avx512f|avx512_bf16|amx_tile|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
[ -f "$GGUF" ] || { echo "missing $GGUF (run quester once to download the default model)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (apt-get install time)" >&2; exit 1; }
if [ "$SEQUENTIAL" != 0 ] && [ ! -x bench/.venv-llamacpp/bin/python ]; then
  python3 -m venv bench/.venv-llamacpp
  # PyPI has only the sdist: built here with native flags, and never from pip's wheel cache,
  # which may hold a build from another CPU (a SIGILL on this one).
  CMAKE_ARGS="-DGGML_NATIVE=ON" nice -n 19 bench/.venv-llamacpp/bin/pip install -q --no-cache-dir llama-cpp-python==0.3.36
fi
[ -x "$SERVER" ] || bench/build_llama_server.sh
cargo build -q --release -p quester-model --example bench_decode
BIN="${CARGO_TARGET_DIR:-target}/release/examples/bench_decode"
TMP=$(mktemp -d)
SPID=
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

# run NAME CMD...: runs one side under GNU time (peak RSS), echoes its output, and stops the
# script if it fails or prints no "= X tok/s" figure (with the tail of its stderr and of
# $EXTRA_LOG if set). Sets $tps to the figure.
run() {
  local name=$1 rc=0; shift
  /usr/bin/time -f "peak_rss_kb=%M" -o "$TMP/$name.mem" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || rc=$?
  cat "$TMP/$name.out"
  tps=$(sed -n -E 's/.*= ([0-9.]+) tok\/s.*/\1/p' "$TMP/$name.out" | tail -1)
  if [ "$rc" -ne 0 ] || [ -z "$tps" ]; then
    local why="exit status $rc"
    [ "$rc" -eq 132 ] && why="$why (SIGILL: built for another CPU? delete bench/.venv-llamacpp or bench/.llamacpp-server to rebuild here)"
    [ "$rc" -eq 124 ] && why="$why (timed out)"
    [ "$rc" -eq 0 ] && why="no tok/s figure in its output"
    echo "FAILED: $name side: $why; last lines of its stderr:" >&2
    tail -n 20 "$TMP/$name.err" >&2
    grep -h 'signal' "$TMP/$name.mem" >&2 || true
    if [ -n "${EXTRA_LOG:-}" ]; then echo "last lines of $EXTRA_LOG:" >&2; tail -n 20 "$EXTRA_LOG" >&2; fi
    exit 1
  fi
}
rss() { echo "$1 peak RSS: $(( $(sed -n 's/peak_rss_kb=//p' "$TMP/$1.mem") / 1024 )) MB"; }

run quester "$BIN" "$N" "$M" --precision "$PRECISION"; ours=$tps; rss quester
if [ "$SEQUENTIAL" != 0 ]; then
  run llama.cpp bench/.venv-llamacpp/bin/python bench/decode_llamacpp.py "$GGUF" "$N" "$M" "$THREADS"
  seq=$tps; rss llama.cpp
fi

# llama-server on a free loopback port; context for N slots of (prompt <= 256) + M tokens.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SERVER" -m "$GGUF" --host 127.0.0.1 --port "$PORT" -np "$N" -c $((N * (M + 256))) -t "$THREADS" ${SERVER_ARGS:-} \
  >"$TMP/server.log" 2>&1 &
SPID=$!
export SERVER_PID=$SPID EXTRA_LOG="$TMP/server.log"
run llama-server timeout 900 python3 bench/decode_llamaserver.py "$PORT" "$N" "$M" 600; srv=$tps
# The server's own peak (the timed process above is the client).
echo "llama-server peak RSS: $(( $(sed -n -E 's/^VmHWM:[[:space:]]*([0-9]+) kB/\1/p' "/proc/$SPID/status") / 1024 )) MB"
kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=

[ "$SEQUENTIAL" != 0 ] && python3 -c "print(f'ratio quester / llama.cpp (sequential) = {$ours / $seq:.2f}')"
python3 -c "print(f'ratio quester / llama-server ($N slots) = {$ours / $srv:.2f}')"
