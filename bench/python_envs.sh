#!/usr/bin/env bash
# The Python package in process (quester_envs) against plain-Python envs, in one run.
#   bench/python_envs.sh [MINESWEEPER_EPISODES] [TICTACTOE_EPISODES] [SOKOBAN_EPISODES]
# Needs cargo and Python 3 with venv; installs maturin from PyPI into the venv's build env.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/py-venv.sh
target="$(quester_target)"
venv="$target/py-venv"
py_venv "$venv"
# pip builds the extension in release mode (maturin's default).
CARGO_TARGET_DIR="$target" "$venv/bin/pip" install -q --force-reinstall --no-deps ./python
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), load: $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
"$venv/bin/python" bench/python_envs.py "$@"
