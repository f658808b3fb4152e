#!/usr/bin/env bash
# One PPO training step of 8 x 256 tokens (64 prompt + 192 trained), full fine-tune and LoRA
# (r 16, alpha 32, all 7 projections), side by side: ours (candle, release) and PyTorch +
# transformers eager, both on 2 threads, on the same weights (the default model, dequantised to
# f32 and exported by our HF exporter, which PyTorch then loads) with the same batch and loss.
# Prints time per step (mean over the timed steps, after one untimed warm-up step), peak RSS of
# each process and the ratio. Needs bench/.venv-torch (see docs/training.md).
# GROUP=8 PROMPT=192: the GRPO shape, 8 completions of one 192-token prompt (ours runs the
# shared prompt once; PyTorch runs every row in full).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
STEPS=${STEPS:-2}
MODES=${MODES:-"lora full"}
GROUP=${GROUP:-1}
PROMPT=${PROMPT:-64}
SHAPE=(--batch 8 --seq 256 --prompt "$PROMPT" --group "$GROUP" --steps "$STEPS")
OUT=bench/out/train_step
mkdir -p "$OUT"
PY=bench/.venv-torch/bin/python
[ -x "$PY" ] || { echo "missing $PY: python3 -m venv bench/.venv-torch && bench/.venv-torch/bin/pip install torch transformers peft safetensors"; exit 1; }
export RAYON_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
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
for mode in $MODES; do
  ours=$("$BIN" --mode "$mode" "${SHAPE[@]}" | tee -a /dev/stderr | grep '^RESULT')
  theirs=$("$PY" bench/train_step_torch.py "$OUT/smollm2-f32" --mode "$mode" "${SHAPE[@]}" --threads "$THREADS" | tee -a /dev/stderr | grep '^RESULT')
  get() { echo "$1" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2; }
  o=$(get "$ours" step_s); t=$(get "$theirs" step_s)
  echo "== $mode (8 x 256, prompt $PROMPT, groups of $GROUP): ours $o s/step (peak $(get "$ours" peak_rss_mb) MB, first loss see above) | torch $t s/step (peak $(get "$theirs" peak_rss_mb) MB) | ours/torch time ratio $(python3 -c "print(f'{$o/$t:.2f}')")"
done
