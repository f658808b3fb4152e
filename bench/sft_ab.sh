#!/usr/bin/env bash
# Our SFT step, two binaries alternated on the same data and settings as bench/sft.sh's "ours"
# side (ROUNDS rounds of A then B, 1 warm-up + 8 timed steps each): for a change to our own step,
# where the machine's drift between separate runs is larger than the change.
#   bench/sft_ab.sh OLD_BINARY NEW_BINARY      (needs bench/out/sft/smollm2-f32: run bench/sft.sh once)
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: bench/sft_ab.sh A_BINARY B_BINARY}; B=${2:?usage: bench/sft_ab.sh A_BINARY B_BINARY}
ROUNDS=${ROUNDS:-2}
OUT=bench/out/sft; MODEL=$OUT/smollm2-f32; DATA=${DATA:-data/demos/tictactoe.jsonl}
[ -f "$MODEL/model.safetensors" ] || { echo "missing $MODEL: run bench/sft.sh once" >&2; exit 1; }
export RAYON_NUM_THREADS=2 OMP_NUM_THREADS=2 MKL_NUM_THREADS=2
for round in $(seq "$ROUNDS"); do
  for side in A B; do
    bin=$A; [ "$side" = B ] && bin=$B
    dir=$OUT/ab_$side
    rm -rf "$dir"
    "$bin" sft --config configs/sft_tictactoe_cpu.toml --set eval.at_end=false --set sft.val_fraction=0 \
      --set output.progress=false --set model.path="$MODEL" --set model.train=lora --set model.lora.rank=8 \
      --set model.lora.alpha=16 --set sft.data="$DATA" --set sft.max_steps=9 --set sft.max_tokens=1024 \
      --set sft.step_tokens=4096 --set training.optimizer.lr=1e-3 --set training.optimizer.weight_decay=0.01 \
      --set training.grad_clip=1.0 --set training.lr_schedule.kind=constant --set training.lr_schedule.warmup_steps=0 \
      --run-dir "$dir" >"$dir.log" 2>&1 || { tail -20 "$dir.log"; exit 1; }
    python3 - "$dir/metrics.jsonl" "round $round $side" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("kind") == "sft"][1:]  # the first step is the warm-up
t = sum(r["time_step_s"] for r in rows)
print(sys.argv[2], f"step_s {t / len(rows):.3f}", f"tokens/s {sum(r['tokens'] for r in rows) / t:.1f}",
      f"final_loss {rows[-1]['loss']}")
PY
  done
done
