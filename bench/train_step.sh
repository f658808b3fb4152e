#!/usr/bin/env bash
# One PPO training step of 8 x 256 tokens (64 prompt + 192 trained), full fine-tune and LoRA
# (r 16, alpha 32, all 7 projections), side by side: ours (candle, release) and PyTorch +
# transformers eager, both on 2 threads, on the same weights (the default model, dequantised to
# f32 and exported by our HF exporter, which PyTorch then loads) with the same batch and loss.
# Prints time per step (mean over the timed steps, after one untimed warm-up step), peak RSS of
# each process and the ratio. Needs bench/.venv-torch (see docs/training.md).
# GROUP=8 PROMPT=192: the GRPO shape, 8 completions of one 192-token prompt (ours runs the
# shared prompt once; PyTorch runs every row in full).
# PyTorch runs twice per mode, interleaved with ours: f32 eager and bf16 autocast (f32 master
# weights, bf16 matmuls), so a bf16 path of ours has a like-for-like anchor.
# PRECISION=f32|bf16 (default f32) is passed to our binary only, as --precision.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
STEPS=${STEPS:-2}
MODES=${MODES:-"lora full"}
GROUP=${GROUP:-1}
PROMPT=${PROMPT:-64}
PRECISION=${PRECISION:-f32}
SHAPE=(--batch 8 --seq 256 --prompt "$PROMPT" --group "$GROUP" --steps "$STEPS")
OUT=bench/out/train_step
mkdir -p "$OUT"
PY=bench/.venv-torch/bin/python
[ -x "$PY" ] || { echo "missing $PY: python3 -m venv bench/.venv-torch && bench/.venv-torch/bin/pip install torch transformers peft safetensors"; exit 1; }
export RAYON_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
# bf16 speed hinges on these (AVX512-BF16 dot products, AMX tiles): print them with the results.
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "cpu flags: $(grep -o -w -E 'avx512f|avx512_bf16|amx_tile|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "torch: $("$PY" -c 'import torch; print(torch.__version__, "cpu capability", torch.backends.cpu.get_cpu_capability())')"
# PROFILE=release (default) or dev-o3: the dev profile (dependencies already at opt-level 3)
# with quester-model itself at opt-level 3 and no debug assertions, which avoids a full release
# build of candle on a busy 2-core machine.
if [ "${PROFILE:-release}" = dev-o3 ]; then
  cargo build -q -p quester-model --example bench_train_step \
    --config 'profile.dev.package.quester-model.opt-level=3' \
    --config 'profile.dev.package.quester-model.debug-assertions=false' \
    --config 'profile.dev.package.quester-model.overflow-checks=false'
  BIN=${CARGO_TARGET_DIR:-target}/debug/examples/bench_train_step
else
  cargo build --release -q -p quester-model --example bench_train_step
  BIN=${CARGO_TARGET_DIR:-target}/release/examples/bench_train_step
fi
"$BIN" --export "$OUT/smollm2-f32" --mode lora --steps 0 --seq 16 --prompt 4 --batch 1 >/dev/null
get() { echo "$1" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2; }
run_torch() { "$PY" bench/train_step_torch.py "$OUT/smollm2-f32" --mode "$1" "${SHAPE[@]}" --threads "$THREADS" --autocast "$2" | tee -a /dev/stderr | grep '^RESULT'; }
# ROUNDS=N (default 1) repeats the three runs N times, interleaved, and prints each round's
# ratios and their median: on a shared machine one round's ratio moves by tens of percent.
ROUNDS=${ROUNDS:-1}
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
median() { python3 -c "import statistics, sys; print(f'{statistics.median(float(x) for x in sys.argv[1:]):.2f}')" "$@"; }
for mode in $MODES; do
  r32=(); r16=()
  for round in $(seq 1 "$ROUNDS"); do
    ours=$("$BIN" --mode "$mode" "${SHAPE[@]}" --precision "$PRECISION" | tee -a /dev/stderr | grep '^RESULT')
    t32=$(run_torch "$mode" off)
    t16=$(run_torch "$mode" bf16)
    o=$(get "$ours" step_s); a=$(get "$t32" step_s); b=$(get "$t16" step_s)
    r32+=("$(ratio "$o" "$a")"); r16+=("$(ratio "$o" "$b")")
    echo "== $mode (8 x 256, prompt $PROMPT, groups of $GROUP), round $round of $ROUNDS: ours ($PRECISION) $o s/step (peak $(get "$ours" peak_rss_mb) MB) | torch f32 $a s/step (peak $(get "$t32" peak_rss_mb) MB) | torch bf16 autocast $b s/step (peak $(get "$t16" peak_rss_mb) MB)"
    echo "   loss: ours $(get "$ours" loss) | torch f32 $(get "$t32" loss) | torch bf16 $(get "$t16" loss)"
    echo "   ours/torch-f32 time ratio ${r32[-1]} | ours/torch-bf16 time ratio ${r16[-1]}"
  done
  if [ "$ROUNDS" -gt 1 ]; then
    echo "== $mode over $ROUNDS rounds: ours/torch-f32 time ratio median $(median "${r32[@]}") (${r32[*]}) | ours/torch-bf16 median $(median "${r16[@]}") (${r16[*]})"
  fi
done
