#!/usr/bin/env bash
# The project's test command: every test of every crate, including the ones that use the real
# default model (fetched on first use into $QUESTER_HOME).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace "$@"
# With no arguments (the whole suite): `quester env serve` against OpenEnv's real Python client,
# the Python package's own suite, and rollouts on a real vLLM server (its CPU build).
if [ $# -eq 0 ]; then
  scripts/openenv-client-test.sh
  scripts/python-package-test.sh
  scripts/vllm-test.sh
fi
