#!/usr/bin/env bash
# Supervised fine-tuning throughput, side by side in one run: ours (`quester sft`) and Hugging
# Face TRL's SFTTrainer (bench/sft_trl.py), on the same CPU, both on THREADS threads, f32.
# Prints for each side: tokens/s (all tokens of the examples trained, and assistant/target
# tokens), seconds per optimizer step, peak RSS (/usr/bin/time -v, "Maximum resident set
# size" of the whole process), and the ratios ours/TRL of tokens/s and of peak memory.
#
# Same on both sides: SmolLM2-135M-Instruct as one f32 Hugging Face directory both load (ours
# with model.path; written once by `quester sft` at lr 0 for one step + `quester export
# --format hf`, i.e. the default GGUF dequantised, LoRA B = 0 merged), LoRA r 8 / alpha 16 /
# dropout 0 on q,k,v,o,gate,up,down (quester's default targets), max length 1024
# (sft.max_tokens; no example is near it), AdamW lr 1e-3 constant (the preset's cosine
# schedule is set to constant here, as TRL's), weight decay 0.01, grad clip 1.0, the data
# file (DATA; every example is one user turn + one assistant turn), the loss on the assistant tokens only (content +
# <|im_end|> + newline, 14 tokens per tictactoe example on both sides: the TRL script prints
# data_target_tokens and quester logs target_tokens for the whole file), and the examples per
# optimizer step: ours packs examples into a step up to sft.step_tokens = 4096 tokens
# (15 examples of ~270 tokens here); TRL gets round(ours' mean examples per timed step)
# examples per step (TRL_BATCH x TRL_ACCUM).
#
# Timing: STEPS + 1 optimizer steps on each side; the first is a warm-up and is not counted.
# Ours: the sum of metrics.jsonl's time_step_s over steps 2..STEPS+1 (whole step: micro-batch
# planning, forward, backward, AdamW), tokens and target_tokens of those rows. TRL: end of
# step 1 to end of step STEPS+1 (TrainerCallback.on_step_end), tokens counted from the batches
# it ran. Neither counts model loading or tokenising the file; peak RSS covers the whole
# process (loading included).
#
# What differs (not settings of this script):
#  - The examples in each step: both sides shuffle the same file with their own seeded order,
#    so the steps hold different (similar-length) examples; tokens/s normalises for that, and
#    both print their tokens per step.
#  - Micro-batching: ours splits a step into micro-batches of training.micro_batch_tokens =
#    2048 (sft's default: 2 passes of ~7-8 examples), sorted by tokens, running the prompt
#    prefix the examples of a micro-batch share once (docs/performance.md); TRL runs a step
#    as TRL_ACCUM = 3 padded micro-batches of TRL_BATCH = 5 examples (gradient accumulation;
#    on the idle 2-core box 5 x 3 ran 25.9 s/step against 32.5 s/step and 15.8 GB for one
#    batch of 15). Packing and padding_free stay off: they flatten a batch into one row,
#    which is only correct with FlashAttention's varlen kernels, not sdpa on the CPU. TRL's
#    tokens/s counts real tokens, not padding (padded_tokens_per_s is printed too).
#  - TRL computes per-token entropy and accuracy for its logs in every loss pass (SFTTrainer's
#    default); ours does not.
#
# Run: bench/sft.sh   (BIN=/path/to/quester to use a prebuilt binary)
# Env: STEPS (8 timed steps, + 1 warm-up), THREADS (2), DATA (data/demos/tictactoe.jsonl;
# made with `quester demos tictactoe --episodes 100` when missing), BIN (target/release/quester,
# built if missing), MODEL (bench/out/sft/smollm2-f32, written if missing), TRL_BATCH /
# TRL_ACCUM (TRL's per-device batch and gradient accumulation; default: 3, and ours' examples
# per step / 3). Outputs and logs: bench/out/sft/. Needs bench/.venv-torch with trl:
#   python3 -m venv bench/.venv-torch && bench/.venv-torch/bin/pip install torch transformers peft safetensors trl
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-8}
THREADS=${THREADS:-2}
DATA=${DATA:-data/demos/tictactoe.jsonl}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/quester}
OUT=bench/out/sft
MODEL=${MODEL:-$OUT/smollm2-f32}
CONFIG=configs/sft_tictactoe_cpu.toml
PY=bench/.venv-torch/bin/python
mkdir -p "$OUT"
[ -x "$PY" ] || { echo "missing $PY: python3 -m venv bench/.venv-torch && bench/.venv-torch/bin/pip install torch transformers peft safetensors trl"; exit 1; }
"$PY" -c 'import trl' 2>/dev/null || { echo "trl missing in bench/.venv-torch: bench/.venv-torch/bin/pip install trl"; exit 1; }
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (apt-get install time)"; exit 1; }
[ -x "$BIN" ] || cargo build --release -q -p quester-cli
export RAYON_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
COMMON=(--set eval.at_end=false --set sft.val_fraction=0 --set output.progress=false)

if [ ! -f "$DATA" ]; then
  DATA=$OUT/demos_tictactoe.jsonl
  [ -f "$DATA" ] || "$BIN" demos tictactoe --episodes 100 --out "$DATA" >"$OUT/demos.log" 2>&1
fi
if [ ! -f "$MODEL/model.safetensors" ]; then
  # One step at lr 0 leaves LoRA's B at zero, so the merged export is the base model's f32 weights.
  head -2 "$DATA" >"$OUT/export_data.jsonl"
  rm -rf "$OUT/export_run" "$MODEL"
  "$BIN" sft --config "$CONFIG" "${COMMON[@]}" --set sft.data="$OUT/export_data.jsonl" --set sft.max_steps=1 \
    --set training.optimizer.lr=0 --set training.lr_schedule.kind=constant --set training.lr_schedule.warmup_steps=0 \
    --run-dir "$OUT/export_run" >"$OUT/export.log" 2>&1 || { tail -20 "$OUT/export.log"; exit 1; }
  "$BIN" export --format hf --out "$MODEL" "$OUT/export_run" >>"$OUT/export.log" 2>&1 || { tail -20 "$OUT/export.log"; exit 1; }
fi

get() { echo "$1" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2; }
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b > 0 else 'n/a')" "$1" "$2"; }
peak_mb() { grep 'Maximum resident set size' "$1" | awk '{printf "%.0f", $NF / 1024}'; }

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores visible, threads $THREADS"
echo "ours: $("$BIN" --version) (git $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates 2>/dev/null || echo ' + uncommitted changes in crates/'))"
echo "trl side: $("$PY" -c 'import sys, torch, transformers, trl, peft; print(f"python {sys.version.split()[0]} torch {torch.__version__} (cpu capability {torch.backends.cpu.get_cpu_capability()}) transformers {transformers.__version__} trl {trl.__version__} peft {peft.__version__}")')"
echo "data: $DATA ($(wc -l <"$DATA") examples), model: $MODEL, steps: 1 warm-up + $STEPS timed"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# ours
rm -rf "$OUT/ours"
/usr/bin/time -v -o "$OUT/ours.time" "$BIN" sft --config "$CONFIG" "${COMMON[@]}" \
  --set model.path="$MODEL" --set model.train=lora --set model.lora.rank=8 --set model.lora.alpha=16 \
  --set sft.data="$DATA" --set sft.max_steps=$((STEPS + 1)) --set sft.max_tokens=1024 --set sft.step_tokens=4096 \
  --set training.optimizer.lr=1e-3 --set training.optimizer.weight_decay=0.01 --set training.grad_clip=1.0 \
  --set training.lr_schedule.kind=constant --set training.lr_schedule.warmup_steps=0 \
  --run-dir "$OUT/ours" >"$OUT/ours.log" 2>&1 || { tail -30 "$OUT/ours.log"; exit 1; }
ours=$(python3 - "$OUT/ours/metrics.jsonl" "$OUT/ours.log" "$(peak_mb "$OUT/ours.time")" <<'EOF'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("kind") == "sft"]
timed = rows[1:]
assert timed, "need at least 2 steps"
secs = sum(r["time_step_s"] for r in timed)
tok = sum(r["tokens"] for r in timed)
tgt = sum(r["target_tokens"] for r in timed)
ex = sum(r["samples"] for r in timed)
m = re.search(r"sft: data ready.*?target_tokens=(\d+)", open(sys.argv[2]).read())
n = len(timed)
print(f"RESULT ours steps_timed={n} step_s={secs / n:.3f} step_s_min={min(r['time_step_s'] for r in timed):.3f} "
      f"tokens_per_s={tok / secs:.1f} target_tokens_per_s={tgt / secs:.2f} tokens_per_step={tok / n:.1f} "
      f"target_tokens_per_step={tgt / n:.1f} examples_per_step={ex / n:.2f} warmup_step_s={rows[0]['time_step_s']:.3f} "
      f"data_target_tokens={m.group(1) if m else 'n/a'} final_loss={rows[-1]['loss']:.4f} peak_rss_mb={sys.argv[3]}")
EOF
)
echo "$ours"

# TRL, with ours' examples per step
per_step=$(get "$ours" examples_per_step)
TRL_ACCUM=${TRL_ACCUM:-3}
TRL_BATCH=${TRL_BATCH:-$(python3 -c "import sys; print(max(1, round(float(sys.argv[1]) / int(sys.argv[2]))))" "$per_step" "$TRL_ACCUM")}
/usr/bin/time -v -o "$OUT/trl.time" "$PY" bench/sft_trl.py "$MODEL" --data "$DATA" --steps $((STEPS + 1)) \
  --batch "$TRL_BATCH" --accum "$TRL_ACCUM" --max-length 1024 --rank 8 --alpha 16 --lr 1e-3 --threads "$THREADS" \
  --out "$OUT/trl_tmp" >"$OUT/trl.log" 2>&1 || { tail -30 "$OUT/trl.log"; exit 1; }
trl="$(grep '^RESULT' "$OUT/trl.log") peak_rss_time_mb=$(peak_mb "$OUT/trl.time")"
echo "$trl"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

o_mem=$(get "$ours" peak_rss_mb); t_mem=$(get "$trl" peak_rss_time_mb)
echo
echo "== SFT, LoRA r8, $STEPS timed steps, $THREADS threads, f32"
echo "ours: $(get "$ours" tokens_per_s) tokens/s, $(get "$ours" target_tokens_per_s) target tokens/s, $(get "$ours" step_s) s/step ($(get "$ours" examples_per_step) examples, $(get "$ours" tokens_per_step) tokens per step), peak RSS $o_mem MB"
echo "TRL : $(get "$trl" tokens_per_s) tokens/s, $(get "$trl" target_tokens_per_s) target tokens/s, $(get "$trl" step_s) s/step ($(get "$trl" examples_per_step) examples, $(get "$trl" tokens_per_step) tokens per step; batch $TRL_BATCH x accum $TRL_ACCUM; $(get "$trl" padded_tokens_per_s) padded tokens/s), peak RSS $t_mem MB"
echo "ratio ours/TRL: tokens/s $(ratio "$(get "$ours" tokens_per_s)" "$(get "$trl" tokens_per_s)") | target tokens/s $(ratio "$(get "$ours" target_tokens_per_s)" "$(get "$trl" target_tokens_per_s)") | peak memory $(ratio "$o_mem" "$t_mem")"
echo "target tokens in the whole file: ours $(get "$ours" data_target_tokens) | TRL $(get "$trl" data_target_tokens) (TRL: $(get "$trl" data_tokens) tokens, $(get "$trl" data_tokens_split) when prompt and answer are tokenised apart as ours does)"
