#!/usr/bin/env bash
# One whole GRPO step on the CPU -- sample a group of completions per prompt, score them,
# update the policy -- ours (target/release/quester, configs/grpo_bandit_cpu.toml) against
# Hugging Face TRL's GRPOTrainer (bench/grpo_trl.py), both on 2 threads. Prints the time
# split (generation / scoring / update) of each run and the ratios TRL/ours of the step time.
#
# Same on both sides: SmolLM2-135M-Instruct (ours: the default Q4_1 GGUF dequantised to f32;
# TRL: the same f32 weights written by our HF exporter), the 4 rendered prompts of our step
# (taken from our run's trajectories: chat template with its default system line, then the
# forced prefix `<action>`, 160 tokens), 12 completions per prompt (48), at most 6 new tokens,
# stop at `</action>`, sampling T 0.7 / top-p 0.8 / top-k 20, LoRA r 8 alpha 16 dropout 0 on
# q,k,v,o,gate,up,down, AdamW lr 3e-4 wd 0.01, grad clip 1.0, clip 0.2, no KL (beta 0), one
# epoch, and the update shape of our config: the old log-probs recomputed in one no-grad pass,
# then 3 optimizer steps of 16 completions (mini_batch 16; our metrics row says updates=3).
#
# Differences that remain:
#  - Prefix sharing (an engine difference, not a setting): ours prefills the prefix all 48
#    prompts share once and copies it into every row's KV cache, and drops finished rows;
#    TRL calls transformers' generate on 48 left-padded rows, prefilling all 48 x 160
#    tokens. The 4 bandit prompts are the same text, so this favours ours here. In scoring
#    and training ours sorts sequences by tokens and runs a micro-batch's common prefix once
#    (docs/performance.md); TRL runs every row in full.
#  - Stop string: TRL's is passed via generation_kwargs (stop_strings + the tokenizer,
#    patched in); a stopped row is padded with <|im_end|>, which TRL keeps as its EOS token
#    in the completion (mean completion length 1 token longer than ours' response_len).
#  - Update micro-batching: TRL runs each mini-batch of 16 at once; ours runs it with
#    training.micro_batch_tokens = 4096 (OURS_SET's default), which packs sequences up to 4096
#    computed tokens, a shared prompt counted once: here every mini-batch of 16 in one pass,
#    as TRL. (The preset alone, training.micro_batch = 2, runs 8 passes of 2: session 14
#    measured its update 4.1-4.7x slower, 37-43 s against 9.1-9.2 s. OURS_SET="" runs that.)
#  - Loss: ours is verl's PPO clip with dual clip 3, token mean over the mini-batch; TRL's
#    default loss_type "dapo" (token-level, no dual clip). Cost is the same order; the values
#    differ slightly. TRL's entropy is computed for its logs in the loss pass.
#  - Gradient checkpointing: GRPOConfig turns it on by default; here it is off
#    (TRL_GRAD_CKPT=1 keeps it), as ours does not recompute activations.
#  - bf16: ours (model.precision = bf16) multiplies with bf16 operands in generation,
#    scoring and training. TRL's bf16=True is accelerate's CPU autocast: it covers the
#    old-log-prob pass and the training forward/backward, but not generation, which runs
#    in f32 (grpo_trl.py probes one projection and prints autocast_probe=phase:on-dtype).
#  - Rewards: ours scores in the bandit environment during the rollout (part of its
#    generation time); TRL's reward is a Python function (valid arm 1-4 -> 1).
#  - Step time: ours = time_rollout_s + time_extra_passes_s + time_scoring_s +
#    time_training_s of the metrics row (time_step_s adds the metrics bookkeeping; writing
#    metrics, trajectories and the checkpoint come after it and are not counted). TRL's =
#    first on_step_begin to last on_step_end (TrainerCallback): generation, rewards,
#    advantages, the old-log-prob pass and the 3 optimizer steps. Neither counts loading.
#    process_s (whole process, with model loading and imports) is printed too.
#  - TRL_SINGLE=1 (default) adds the shape "one optimizer step over all 48 completions"
#    (gradient_accumulation_steps 3): TRL then skips the old-log-prob pass. It is compared
#    with ours f32 for reference only; ours has no such shape in this config.
#
# Env: THREADS (2), TRL_SINGLE (1), TRL_GRAD_CKPT (0), OURS_SET (extra --set overrides for
# our runs, space separated; default "training.micro_batch_tokens=4096"). Outputs and logs:
# bench/out/grpo_e2e/. Needs bench/.venv-torch with trl (pip install trl, pinned to the
# installed torch/transformers).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
TRL_SINGLE=${TRL_SINGLE:-1}
TRL_GRAD_CKPT=${TRL_GRAD_CKPT:-0}
OURS_SET=${OURS_SET-training.micro_batch_tokens=4096}
CONFIG=configs/grpo_bandit_cpu.toml
OUT=bench/out/grpo_e2e
MODEL=bench/out/train_step/smollm2-f32
PY=bench/.venv-torch/bin/python
BIN=${CARGO_TARGET_DIR:-target}/release/quester
EXPORTER=${CARGO_TARGET_DIR:-target}/release/examples/bench_train_step
mkdir -p "$OUT"
[ -x "$PY" ] || { echo "missing $PY: python3 -m venv bench/.venv-torch && bench/.venv-torch/bin/pip install torch transformers peft safetensors trl"; exit 1; }
"$PY" -c 'import trl' 2>/dev/null || { echo "trl missing in bench/.venv-torch: bench/.venv-torch/bin/pip install trl (pin torch/transformers with -c)"; exit 1; }
[ -x "$BIN" ] || cargo build --release -q -p quester-cli
if [ ! -f "$MODEL/model.safetensors" ]; then
  [ -x "$EXPORTER" ] || cargo build --release -q -p quester-model --example bench_train_step
  "$EXPORTER" --export "$MODEL" --mode lora --steps 0 --seq 16 --prompt 4 --batch 1 >/dev/null
fi
export RAYON_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores visible, threads $THREADS"
echo "cpu flags: $(grep -o -w -E 'avx512f|avx512_bf16|amx_tile|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "ours: $("$BIN" --version), overrides: ${OURS_SET:-none} (git $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates 2>/dev/null || echo ' + uncommitted changes in crates/')), $(rustc --version 2>/dev/null || echo 'rustc ?')"
echo "trl side: $("$PY" -c 'import sys, torch, transformers, trl, peft, accelerate; print(f"python {sys.version.split()[0]} torch {torch.__version__} (cpu capability {torch.backends.cpu.get_cpu_capability()}) transformers {transformers.__version__} trl {trl.__version__} peft {peft.__version__} accelerate {accelerate.__version__}")')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

get() { echo "$1" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2; }
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b > 0 else 'n/a')" "$1" "$2"; }

# ours PRECISION -> prints "RESULT ours ..." (split from the run's metrics row)
run_ours() {
  local prec=$1 dir=$OUT/ours_$1 sets=()
  for s in $OURS_SET; do sets+=(--set "$s"); done
  rm -rf "$dir"
  local t0 t1
  t0=$(date +%s.%N)
  "$BIN" train -c "$CONFIG" --set training.steps=1 --set eval.at_end=false \
    --set model.precision="$prec" --set output.trajectories_per_step=4 "${sets[@]}" \
    --run-dir "$dir" --no-report >"$OUT/ours_$prec.log" 2>&1 || { tail -20 "$OUT/ours_$prec.log"; exit 1; }
  t1=$(date +%s.%N)
  python3 - "$dir/metrics.jsonl" "$prec" "$t0" "$t1" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = [x for x in rows if x.get("kind", "train") == "train"][-1]
gen, extra, score, upd = (r["time_rollout_s"], r.get("time_extra_passes_s", 0.0), r["time_scoring_s"], r["time_training_s"])
step = gen + extra + score + upd
print(f"RESULT ours precision={sys.argv[2]} gen_s={gen:.3f} score_s={score + extra:.4f} update_s={upd:.3f} "
      f"step_s={step:.3f} time_step_s={r['time_step_s']:.3f} optimizer_steps={r['updates']} samples={r['samples']} "
      f"prompt_tokens={r['prompt_len']:.0f} completion_len={r['response_len']:.2f} "
      f"process_s={float(sys.argv[4]) - float(sys.argv[3]):.3f}")
EOF
}

# the 4 user messages of our step, from our f32 run's trajectories (all 4 tasks logged)
write_prompts() {
  python3 - "$OUT/ours_f32/trajectories.jsonl" "$OUT/prompts.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by_task = {}
for r in rows:
    if r.get("phase") == "train":
        by_task.setdefault(r["task_id"], r["samples"][0]["prompt"])
assert len(by_task) == 4, f"expected the 4 training tasks in the trajectories, got {sorted(by_task)}"
with open(sys.argv[2], "w") as f:
    for k in sorted(by_task):
        f.write(json.dumps(by_task[k]) + "\n")
print(f"prompts: {len(by_task)} tasks ({', '.join(sorted(by_task))}), {len(set(by_task.values()))} distinct text(s); first: {json.dumps(next(iter(by_task.values())))}")
EOF
}

run_trl() {
  local name=$1; shift
  local extra=()
  [ "$TRL_GRAD_CKPT" = 1 ] && extra+=(--grad-ckpt)
  "$PY" bench/grpo_trl.py "$MODEL" --prompts "$OUT/prompts.jsonl" --threads "$THREADS" \
    --out "$OUT/trl_tmp" "${extra[@]}" "$@" >"$OUT/trl_$name.log" 2>&1 || { tail -30 "$OUT/trl_$name.log"; exit 1; }
  grep '^RESULT' "$OUT/trl_$name.log"
}

split() { echo "gen $(get "$1" gen_s) s | score $(get "$1" score_s) s | update $(get "$1" update_s) s | step $(get "$1" step_s) s"; }

o32=$(run_ours f32); echo "$o32"
write_prompts
t32=$(run_trl f32 --autocast off); echo "$t32"
o16=$(run_ours bf16); echo "$o16"
t16=$(run_trl bf16 --autocast bf16 || true)
case "$t16" in
  RESULT*) echo "$t16" ;;
  *) echo "TRL bf16 autocast failed (log: $OUT/trl_bf16.log):"; echo "$t16"; t16="" ;;
esac
t1=""
if [ "$TRL_SINGLE" = 1 ]; then t1=$(run_trl f32_single --autocast off --shape single); echo "$t1"; fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "== one GRPO step: 4 prompts x 12 completions, <= 6 new tokens, LoRA r8, $THREADS threads"
echo "ours f32          : $(split "$o32") (time_step_s $(get "$o32" time_step_s), process $(get "$o32" process_s) s, $(get "$o32" optimizer_steps) optimizer steps)"
echo "TRL f32           : $(split "$t32") (old-logp pass $(get "$t32" oldlogp_s) s, process $(get "$t32" process_s) s, $(get "$t32" optimizer_steps) optimizer steps)"
echo "ours bf16         : $(split "$o16") (time_step_s $(get "$o16" time_step_s), process $(get "$o16" process_s) s)"
[ -n "$t16" ] && echo "TRL bf16 autocast : $(split "$t16") (old-logp pass $(get "$t16" oldlogp_s) s, process $(get "$t16" process_s) s; autocast $(get "$t16" autocast_probe))"
[ -n "$t1" ] && echo "TRL f32 1 update  : $(split "$t1") (no old-logp pass, $(get "$t1" optimizer_steps) optimizer step over 48)"
echo
echo "ratio TRL/ours, step wall time (generation | update):"
echo "  f32            : $(ratio "$(get "$t32" step_s)" "$(get "$o32" step_s)") ($(ratio "$(get "$t32" gen_s)" "$(get "$o32" gen_s)") | $(ratio "$(get "$t32" update_s)" "$(get "$o32" update_s)"))"
[ -n "$t16" ] && echo "  bf16           : $(ratio "$(get "$t16" step_s)" "$(get "$o16" step_s)") ($(ratio "$(get "$t16" gen_s)" "$(get "$o16" gen_s)") | $(ratio "$(get "$t16" update_s)" "$(get "$o16" update_s)"))"
[ -n "$t16" ] && echo "  TRL bf16 / ours f32 : $(ratio "$(get "$t16" step_s)" "$(get "$o32" step_s)")"
[ -n "$t1" ] && echo "  TRL f32 1 update / ours f32 (different update shape): $(ratio "$(get "$t1" step_s)" "$(get "$o32" step_s)")"
echo "  ours bf16 / ours f32: $(ratio "$(get "$o16" step_s)" "$(get "$o32" step_s)")"
echo "prompt tokens: ours $(get "$o32" prompt_tokens) | TRL $(get "$t32" prompt_tokens); mean completion tokens: ours $(get "$o32" completion_len) | TRL $(get "$t32" completion_len) (TRL counts the stop row's EOS)"
