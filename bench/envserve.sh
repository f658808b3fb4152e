#!/usr/bin/env bash
# `quester env serve` throughput vs OpenEnv's own Python server, in one run: SESSIONS concurrent
# WebSocket sessions each play STEPS steps of Sokoban, MineSweeper and Tic-Tac-Toe (vs MCTS-100),
# one server per game, driven by the same client (bench/envserve_client.py). The anchor is
# `openenv` 0.10.0's `create_app` under uvicorn over plain-Python games
# (bench/envserve_anchor_server.py). Prints steps/s per game and overall, and the ratio.
#   bench/envserve.sh [STEPS] [SESSIONS]
# QUESTER_BIN: a release quester with `env serve`; by default quester-envserve's `serve_env`
# example is built in release (the same server, without the CLI's ML crates to compile).
# Needs Python 3 with venv and PyPI access.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-100}
SESSIONS=${2:-64}
TARGET=${CARGO_TARGET_DIR:-target}
VENV=${OPENENV_VENV:-$TARGET/openenv-venv}
GAMES="sokoban minesweeper tictactoe"

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q openenv==0.10.0 uvicorn==0.55.0 websockets==17.4
PY="$VENV/bin/python"

if [ -n "${QUESTER_BIN:-}" ]; then
    ours() { "$QUESTER_BIN" env serve "$1" --addr "$2" --max-sessions "$SESSIONS"; }
    OURS_NAME="$QUESTER_BIN env serve"
else
    cargo build -q --release -j 1 -p quester-envserve --example serve_env
    ours() { "$TARGET/release/examples/serve_env" "$1" "$2"; }
    OURS_NAME="serve_env example (release)"
fi
anchor() { "$PY" bench/envserve_anchor_server.py "$1" "${2##*:}"; }

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Starts a server with `$1 GAME ADDR`, waits for /health, runs the client, stops the server.
measure() {
    local server=$1 game=$2 port pid
    port=$(free_port)
    "$server" "$game" "127.0.0.1:$port" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 600); do
        "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=1)" \
            2>/dev/null && break
        sleep 0.1
    done
    "$PY" bench/envserve_client.py "ws://127.0.0.1:$port/ws" "$SESSIONS" "$STEPS"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

OUT=$(mktemp)
echo "== $SESSIONS sessions x $STEPS steps per game; ours: $OURS_NAME; anchor: openenv $("$VENV/bin/pip" show openenv | awk '/^Version/{print $2}'), Python $("$PY" -c 'import sys; print(sys.version.split()[0])') =="
for game in $GAMES; do
    echo "ours $game $(measure ours "$game")" | tee -a "$OUT"
    echo "anchor $game $(measure anchor "$game")" | tee -a "$OUT"
done
"$PY" - "$OUT" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    side, game, data = line.split(" ", 2)
    rows[(side, game)] = json.loads(data)
games = sorted({g for _, g in rows}, key=["sokoban", "minesweeper", "tictactoe"].index)
total = {}
for game in games:
    o, a = rows[("ours", game)], rows[("anchor", game)]
    print(f"{game}: ours {o['steps_per_s']:.0f} steps/s, anchor {a['steps_per_s']:.0f} steps/s, "
          f"ratio {o['steps_per_s'] / a['steps_per_s']:.1f}x")
for side in ("ours", "anchor"):
    steps = sum(rows[(side, g)]["steps"] for g in games)
    seconds = sum(rows[(side, g)]["seconds"] for g in games)
    total[side] = steps / seconds
print(f"all three games: ours {total['ours']:.0f} steps/s, anchor {total['anchor']:.0f} steps/s, "
      f"ratio {total['ours'] / total['anchor']:.1f}x (target: at least 5x)")
PY
rm -f "$OUT"
