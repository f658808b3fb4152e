#!/usr/bin/env bash
# `quester serve` under load against llama.cpp's server on the same GGUF: C concurrent clients
# each sending R requests of mixed prompt lengths and token limits (bench/serve_load.py),
# greedy, non-streamed. Ours decodes up to SLOTS sequences at once with continuous batching;
# llama-server runs SLOTS parallel slots with --cont-batching. Prints each side's completion
# tokens/s with p50 and p99 latency, then the throughput ratio.
# Ours serves the default model (this GGUF) at the default precision; QUESTER_ARGS adds flags
# (QUESTER_ARGS="--set model.precision=bf16"), SERVER_ARGS adds llama-server's.
# Usage: bench/serve.sh [C=32] [R=8] [SLOTS=32]
set -euo pipefail
cd "$(dirname "$0")/.."
C="${1:-32}"; R="${2:-8}"; SLOTS="${3:-32}"
THREADS=$(nproc)
GGUF="${QUESTER_HOME:-$HOME/.cache/quester}/models/SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER=bench/.llamacpp-server/llama-server
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
[ -f "$GGUF" ] || { echo "missing $GGUF (run quester once to download the default model)" >&2; exit 1; }
[ -x "$SERVER" ] || bench/build_llama_server.sh
cargo build -q --release -p quester-cli
BIN="${CARGO_TARGET_DIR:-target}/release/quester"
TMP=$(mktemp -d)
SPID=
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_up URL NAME: until the server answers /v1/models (both serve it once loaded).
wait_up() {
  for _ in $(seq 1 240); do
    kill -0 "$SPID" 2>/dev/null || { echo "FAILED: $2 exited while starting:" >&2; tail -20 "$TMP/$2.log" >&2; exit 1; }
    python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + '/models', timeout=2)" "$1" 2>/dev/null && return
    sleep 0.5
  done
  echo "FAILED: $2 did not come up" >&2; tail -20 "$TMP/$2.log" >&2; exit 1
}
# load NAME URL: runs the load and sets $tps.
load() {
  local out
  out=$(python3 bench/serve_load.py "$2" "$C" "$R" default 900) || { echo "FAILED: $1 side" >&2; tail -20 "$TMP/$1.log" >&2; exit 1; }
  echo "$1: $out"
  tps=$(sed -n -E 's/.*= ([0-9.]+) tok\/s.*/\1/p' <<<"$out")
}

P=$(port)
RAYON_NUM_THREADS=$THREADS "$BIN" serve --addr "127.0.0.1:$P" --max-batch "$SLOTS" --max-queue $((C * 2)) ${QUESTER_ARGS:-} \
  >"$TMP/quester.log" 2>&1 &
SPID=$!
wait_up "http://127.0.0.1:$P/v1" quester
load quester "http://127.0.0.1:$P/v1"; ours=$tps
grep -m1 -o 'model precision [A-Za-z0-9]*' "$TMP/quester.log" || true
kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=

P=$(port)
"$SERVER" -m "$GGUF" --host 127.0.0.1 --port "$P" -np "$SLOTS" --cont-batching -c $((SLOTS * 1024)) -t "$THREADS" ${SERVER_ARGS:-} \
  >"$TMP/llama-server.log" 2>&1 &
SPID=$!
wait_up "http://127.0.0.1:$P/v1" llama-server
load llama-server "http://127.0.0.1:$P/v1"; theirs=$tps
kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=

python3 -c "print(f'ratio quester serve / llama-server ($SLOTS slots) = {$ours / $theirs:.2f}')"
