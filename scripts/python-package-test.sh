#!/usr/bin/env bash
# The Python package (python/, the quester_envs module) and its pytest suite (python/tests):
# builds quester (the suite checks the package against `quester env run` and `quester env
# serve`), installs the package with pip into a venv, runs pytest.
# Usage: scripts/python-package-test.sh [pytest args...]
# QUESTER_BIN=PATH uses that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/py-venv.sh

target="$(quester_target)"
if [ -z "${QUESTER_BIN:-}" ]; then
  cargo build -p quester-cli
  QUESTER_BIN="$target/debug/quester"
fi
venv="$target/py-venv"
py_venv "$venv" python/tests/requirements.txt
# pip builds the extension with maturin (release profile) into $target, so it is reused.
CARGO_TARGET_DIR="$target" "$venv/bin/pip" install -q --force-reinstall --no-deps ./python
cd python
QUESTER_BIN="$(realpath "$QUESTER_BIN")" exec "$venv/bin/pytest" -q tests "$@"
