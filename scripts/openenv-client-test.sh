#!/usr/bin/env bash
# `quester env serve` against OpenEnv's real Python client and `openenv validate`
# (tests/python): builds the quester binary, installs the pinned client into a venv, runs pytest.
# Usage: scripts/openenv-client-test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/py-venv.sh

target="$(quester_target)"
cargo build -p quester-cli
venv="${OPENENV_VENV:-$target/openenv-venv}"
py_venv "$venv" tests/python/requirements.txt
QUESTER_BIN="$target/debug/quester" exec "$venv/bin/pytest" -q tests/python "$@"
