#!/usr/bin/env bash
# `quester env serve` against OpenEnv's real Python client and `openenv validate`
# (tests/python): builds the quester binary, installs the pinned client into a venv, runs pytest.
# Usage: scripts/openenv-client-test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
cargo build -p quester-cli
venv="${OPENENV_VENV:-$target/openenv-venv}"
if [ ! -x "$venv/bin/pytest" ]; then
  python3 -m venv "$venv" || {
    echo "python3 -m venv failed: on Debian/Ubuntu install python3-venv" >&2
    exit 1
  }
  "$venv/bin/pip" install -q -r tests/python/requirements.txt
fi
QUESTER_BIN="$(realpath "$target/debug/quester")" exec "$venv/bin/pytest" -q tests/python "$@"
