#!/usr/bin/env python3
"""One GRPO step with Hugging Face TRL's GRPOTrainer on the CPU, timed in phases.

The anchor of bench/grpo_e2e.sh: the same model (our exporter's f32 Hugging Face directory),
the same prompt text, the same group shape (4 prompts x 12 completions), at most 6 new
tokens after a forced `<action>` prefix, LoRA r 8 / alpha 16 on the 7 projections, sampling
at T 0.7 / top-p 0.8 / top-k 20, lr 3e-4, no KL term (beta 0), one pass over the batch.

Shapes (--shape):
  minibatch (default): what quester's grpo_bandit_cpu config does. 48 completions are
      generated once, their old log-probs are recomputed in one no-grad pass (16 at a time),
      then three optimizer steps of 16 completions each (per_device_train_batch_size 16,
      gradient_accumulation_steps 1, steps_per_generation 3, max_steps 3).
  single: one optimizer step over all 48 completions (per_device_train_batch_size 16,
      gradient_accumulation_steps 3, steps_per_generation 3, max_steps 1). TRL then skips the
      old-log-prob pass (the ratio's denominator is the detached current log-prob).

Phases, measured by wrapping the trainer's own methods:
  gen    GRPOTrainer._generate: tokenising the prompts, model.generate, decoding.
  score  the rest of _generate_and_score_completions except the old-log-prob pass:
         padding, _calculate_rewards (reported alone as reward_s), group advantages.
  update the step wall time minus gen and score: the old-log-prob pass (also reported alone
         as oldlogp_s), forward + backward of the loss, clipping, AdamW.
  step   from the first on_step_begin to the last on_step_end of the run (TrainerCallback).

Prints one line `RESULT trl key=value ...`.
"""

import argparse
import json
import os
import re
import resource
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_dir", help="Hugging Face model directory (config.json, model.safetensors, tokenizer)")
    p.add_argument(
        "--prompts",
        required=True,
        help="JSON lines, one JSON string per line: the user message of each task (the tasks of one step)",
    )
    p.add_argument("--prefix", default="<action>", help="forced start of the response, appended after the chat template")
    p.add_argument("--stop", default="</action>", help="stop string ('' for none)")
    p.add_argument("--group", type=int, default=12)
    p.add_argument("--max-new", type=int, default=6)
    p.add_argument("--mini-batch", type=int, default=16)
    p.add_argument("--shape", choices=["minibatch", "single"], default="minibatch")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16.0)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--autocast", choices=["off", "bf16"], default="off")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--grad-ckpt",
        action="store_true",
        help="keep GRPOConfig's default gradient checkpointing (on); off by default here, as quester does not recompute activations",
    )
    p.add_argument("--out", default="bench/out/grpo_e2e/trl_tmp", help="trainer output_dir (nothing is saved)")
    return p.parse_args()


def main():
    args = parse_args()
    t_process = time.perf_counter()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    os.environ.setdefault("MKL_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    import datasets
    import peft
    import transformers
    import trl
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()

    tok = AutoTokenizer.from_pretrained(args.model_dir)
    with open(args.prompts, encoding="utf-8") as f:
        user_texts = [json.loads(line) for line in f if line.strip()]
    # quester renders the chat template with the generation prompt, then appends the forced
    # response prefix; a plain-text (already rendered) prompt does the same in TRL.
    rendered = [
        tok.apply_chat_template([{"role": "user", "content": u}], tokenize=False, add_generation_prompt=True)
        + args.prefix
        for u in user_texts
    ]
    prompt_tokens = "/".join(str(len(tok(r)["input_ids"])) for r in rendered)
    train = datasets.Dataset.from_dict({"prompt": rendered})
    tasks = len(rendered)

    t_load = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32)
    load_s = time.perf_counter() - t_load

    lora = LoraConfig(
        r=args.rank,
        lora_alpha=args.alpha,
        lora_dropout=0.0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        bias="none",
        task_type="CAUSAL_LM",
    )

    n = tasks * args.group
    if n % args.mini_batch:
        sys.exit(f"tasks x group ({n}) must be a multiple of --mini-batch ({args.mini_batch})")
    spg = n // args.mini_batch  # mini-batches per generation batch
    if args.shape == "minibatch":
        grad_acc, max_steps = 1, spg
    else:
        grad_acc, max_steps = spg, 1

    action_re = re.compile(r"^\s*(\d+|scout)\s*(</action>|$)", re.IGNORECASE)

    def bandit_reward(completions, **kwargs):
        # Deterministic stand-in for the bandit's scoring (the time does not depend on it):
        # 1 for a valid arm 1-4, 0 for scout or anything unparsable.
        out = []
        for c in completions:
            m = action_re.match(c)
            ok = m is not None and m.group(1).isdigit() and 1 <= int(m.group(1)) <= 4
            out.append(1.0 if ok else 0.0)
        return out

    gen_kwargs = None
    if args.stop:
        gen_kwargs = {"stop_strings": [args.stop]}

    cfg = GRPOConfig(
        output_dir=args.out,
        use_cpu=True,
        bf16=args.autocast == "bf16",  # GRPOConfig defaults to bf16=True: set explicitly
        fp16=False,
        num_generations=args.group,
        per_device_train_batch_size=args.mini_batch,
        gradient_accumulation_steps=grad_acc,
        steps_per_generation=spg,
        num_iterations=1,
        max_steps=max_steps,
        max_completion_length=args.max_new,
        temperature=0.7,
        top_p=0.8,
        top_k=20,
        generation_kwargs=gen_kwargs,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.01,
        adam_beta1=0.9,
        adam_beta2=0.999,
        adam_epsilon=1e-8,
        max_grad_norm=1.0,
        beta=0.0,
        epsilon=0.2,
        scale_rewards="group",
        disable_dropout=True,
        shuffle_dataset=False,
        seed=args.seed,
        report_to="none",
        logging_strategy="no",
        save_strategy="no",
        log_completions=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
        gradient_checkpointing=args.grad_ckpt,
    )

    times = {"gen": 0.0, "gas": 0.0, "reward": 0.0, "oldlogp": 0.0}
    autocast_seen = {}  # phase -> set of (autocast enabled, activation dtype)

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.begin = None
            self.end = None
            self.steps = []
            self.logs = {}

        def on_step_begin(self, a, state, control, **kw):
            t = time.perf_counter()
            if self.begin is None:
                self.begin = t
            self._t = t

        def on_step_end(self, a, state, control, **kw):
            t = time.perf_counter()
            self.end = t
            self.steps.append(t - self._t)

        def on_log(self, a, state, control, logs=None, **kw):
            if logs:
                self.logs.update(logs)

    timer = StepTimer()
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=bandit_reward,
        args=cfg,
        train_dataset=train,
        processing_class=tok,
        peft_config=lora,
        callbacks=[timer],
    )

    phase = {"now": "train"}

    def timed(name, fn, phase_name=None, only_no_grad=False):
        def wrapper(*a, **kw):
            if only_no_grad and torch.is_grad_enabled():
                return fn(*a, **kw)
            prev = phase["now"]
            if phase_name:
                phase["now"] = phase_name
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                times[name] += time.perf_counter() - t
                phase["now"] = prev

        return wrapper

    trainer._generate = timed("gen", trainer._generate, "gen")
    trainer._generate_and_score_completions = timed("gas", trainer._generate_and_score_completions)
    trainer._calculate_rewards = timed("reward", trainer._calculate_rewards)
    trainer._get_per_token_logps_and_entropies = timed(
        "oldlogp", trainer._get_per_token_logps_and_entropies, "oldlogp", only_no_grad=True
    )

    # Stop strings need the tokenizer at generate time; TRL does not pass it.
    if args.stop:
        pm = trainer.accelerator.unwrap_model(trainer.model)
        orig_generate = pm.generate

        def generate_with_tok(*a, **kw):
            kw.setdefault("tokenizer", tok)
            return orig_generate(*a, **kw)

        pm.generate = generate_with_tok

    # Whether bf16 autocast is really on in each phase: look at one projection's output.
    q0 = None
    for name, mod in trainer.model.named_modules():
        if name.endswith("layers.0.self_attn.q_proj.base_layer"):
            q0 = mod
            break
    if q0 is not None:
        def probe(mod, inp, out):
            key = phase["now"] if phase["now"] != "train" else ("train" if torch.is_grad_enabled() else "nograd")
            autocast_seen.setdefault(key, set()).add((torch.is_autocast_enabled("cpu"), str(out.dtype).replace("torch.", "")))

        q0.register_forward_hook(probe)

    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    t_train = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - t_train

    step_s = timer.end - timer.begin
    gen_s = times["gen"]
    oldlogp_s = times["oldlogp"]
    score_s = times["gas"] - gen_s - oldlogp_s
    update_s = step_s - gen_s - score_s
    comp_len = float(timer.logs.get("completions/mean_length", "nan"))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ac = ";".join(
        f"{k}:{'/'.join(f'{e}-{d}' for e, d in sorted(v))}" for k, v in sorted(autocast_seen.items())
    )
    print(
        f"versions torch={torch.__version__} transformers={transformers.__version__} trl={trl.__version__} "
        f"peft={peft.__version__} threads={torch.get_num_threads()} cpu_capability={torch.backends.cpu.get_cpu_capability()}",
        flush=True,
    )
    print(
        f"RESULT trl shape={args.shape} autocast={args.autocast} grad_ckpt={int(args.grad_ckpt)} gen_s={gen_s:.3f} score_s={score_s:.3f} "
        f"update_s={update_s:.3f} step_s={step_s:.3f} reward_s={times['reward']:.4f} oldlogp_s={oldlogp_s:.3f} "
        f"optimizer_steps={len(timer.steps)} completions={n} prompt_tokens={prompt_tokens} "
        f"completion_len={comp_len:.2f} trainable={trainable} train_s={train_s:.3f} load_s={load_s:.3f} "
        f"process_s={time.perf_counter() - t_process:.3f} peak_rss_mb={rss_mb:.0f} autocast_probe={ac}",
        flush=True,
    )


if __name__ == "__main__":
    main()
