#!/usr/bin/env bash
# Regenerates crates/quester-model/tests/fixtures from references (needs PyPI access).
# Token ids come from llama.cpp (llama-cpp-python in bench/.venv-llamacpp, also used by
# bench/decode.sh); log-probs from transformers (bench/.venv-fixtures).
set -euo pipefail
cd "$(dirname "$0")/../.."
GGUF="${GGUF:-${QUESTER_HOME:-$HOME/.cache/quester}/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
OUT=crates/quester-model/tests/fixtures
[ -f "$GGUF" ] || { echo "run the quester-model tests once to fetch $GGUF" >&2; exit 1; }
if [ ! -x bench/.venv-fixtures/bin/python ]; then
  python3 -m venv bench/.venv-fixtures
  bench/.venv-fixtures/bin/pip install -q torch transformers accelerate gguf numpy safetensors jinja2
fi
if [ ! -x bench/.venv-llamacpp/bin/python ]; then
  python3 -m venv bench/.venv-llamacpp
  bench/.venv-llamacpp/bin/pip install -q llama-cpp-python==0.3.36 gguf jinja2
fi
# llama.cpp token ids first, then transformers for log-probs (reusing those ids).
bench/.venv-llamacpp/bin/python scripts/model_fixtures/make_fixtures.py --gguf "$GGUF" --out "$OUT" --tokens-only
PYTHONPATH=scripts/model_fixtures bench/.venv-fixtures/bin/python - "$GGUF" "$OUT" <<'PY'
import json, os, sys
import make_fixtures as m
gguf_path, out = sys.argv[1], sys.argv[2]
ref = {c["text"]: c["ids"] for c in json.load(open(os.path.join(out, "token_ids.json")))["cases"]}
fallback, _ = m.hf_tokenizer(gguf_path)
tokenize = lambda t: ref[t] if t in ref else fallback(t)
m.make_default_logprobs(gguf_path, out, tokenize)
m.make_tiny(out)
PY
