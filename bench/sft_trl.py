#!/usr/bin/env python3
"""Supervised fine-tuning with Hugging Face TRL's SFTTrainer on the CPU: the anchor of bench/sft.sh.

Same as `quester sft` in bench/sft.sh: the model is our exporter's f32 Hugging Face directory
(SmolLM2-135M-Instruct), LoRA r 8 / alpha 16 / dropout 0 on q,k,v,o,gate,up,down (quester's
default targets), the same chat JSONL ({"messages": [...]}), the same max length, the same
learning rate, f32, --threads torch threads.

Loss on the assistant tokens only, with TRL's own `assistant_only_loss=True` on the
conversational dataset (the `messages` column). SmolLM2's chat template has no
`{% generation %}` markers, which that option needs, so this script sets the tokenizer's
template to the same template with the markers around the assistant turn's content and its
`<|im_end|>\n` (the rendered text is unchanged; the script checks it on the first example).
Targets are then the assistant content + `<|im_end|>` + `\n`, what quester trains. (The
brief's fallback, `completion_only_loss` on prompt/completion columns, is not needed.)

Batching: packing off and padding_free off. TRL's padding-free / bfd packing flattens a batch
into one row, which is correct only with FlashAttention varlen kernels (CUDA); on the CPU with
sdpa attention it would let examples attend to each other. So each optimizer step is one
padded batch: per_device_train_batch_size = --batch, gradient_accumulation_steps = --accum,
--batch x --accum examples per step (bench/sft.sh sets it to quester's examples per step).

Timing: a TrainerCallback records the time of every on_step_end; the first step is the
warm-up, the timed steps are steps 2..N (from the end of step 1 to the end of step N, so
data collation, forward, backward and AdamW are all in). Tokens of each step are counted from
the batches the trainer runs (wrapping compute_loss): all real tokens (attention mask),
padded tokens (rows x longest row) and target tokens (labels != -100 after the shift).

Prints `RESULT trl key=value ...`.
"""

import argparse
import json
import os
import resource
import sys
import time

# SmolLM2's chat template (as our exporter writes it) with {% generation %} markers around what
# the assistant says, its end-of-turn token and the newline after it.
TRAINING_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}"
    "{% endif %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' }}{% generation %}{{ message['content'] + '<|im_end|>' + '\\n' }}{% endgeneration %}"
    "{% else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_dir", help="Hugging Face model directory (config.json, model.safetensors, tokenizer)")
    p.add_argument("--data", required=True, help="chat JSONL, one {\"messages\": [...]} per line")
    p.add_argument("--steps", type=int, default=9, help="optimizer steps run; the first is the untimed warm-up")
    p.add_argument("--batch", type=int, default=15, help="per_device_train_batch_size")
    p.add_argument("--accum", type=int, default=1, help="gradient_accumulation_steps")
    p.add_argument("--max-length", type=int, default=1024)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16.0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="bench/out/sft/trl_tmp", help="trainer output_dir (nothing is saved)")
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
    from trl import SFTConfig, SFTTrainer

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()

    tok = AutoTokenizer.from_pretrained(args.model_dir)
    with open(args.data, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    # Only the conversation: the other fields (env, seed, episode, ...) are not training input.
    train = datasets.Dataset.from_list([{"messages": r["messages"]} for r in rows])

    original = tok.chat_template
    first = rows[0]["messages"]
    same = tok.apply_chat_template(first, tokenize=False) == tok.apply_chat_template(
        first, tokenize=False, chat_template=TRAINING_TEMPLATE
    )
    if not same:
        sys.exit("the training template does not render like the model's own chat template: update TRAINING_TEMPLATE")
    tok.chat_template = TRAINING_TEMPLATE

    # Targets over the whole file, to compare with quester's "sft: data ready target_tokens=".
    enc = [
        tok.apply_chat_template(r["messages"], tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        for r in rows
    ]
    data_tokens = sum(len(e["input_ids"]) for e in enc)
    data_targets = sum(sum(e["assistant_masks"]) for e in enc)
    # The same text tokenised as quester does it (prompt, then the assistant turn, separately):
    # a difference means the two sides train on different token sequences.
    split_tokens = 0
    for r in rows:
        m = r["messages"]
        prompt = tok.apply_chat_template(m[:-1], tokenize=False, add_generation_prompt=True, chat_template=original)
        full = tok.apply_chat_template(m, tokenize=False, chat_template=original)
        split_tokens += len(tok(prompt)["input_ids"]) + len(tok(full[len(prompt):])["input_ids"])

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
    cfg = SFTConfig(
        output_dir=args.out,
        use_cpu=True,
        bf16=False,
        fp16=False,
        max_length=args.max_length,
        packing=False,
        padding_free=False,
        assistant_only_loss=True,
        completion_only_loss=None,
        per_device_train_batch_size=args.batch,
        gradient_accumulation_steps=args.accum,
        max_steps=args.steps,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.01,
        max_grad_norm=1.0,
        gradient_checkpointing=False,
        seed=args.seed,
        report_to="none",
        logging_strategy="no",
        save_strategy="no",
        eval_strategy="no",
        dataloader_num_workers=0,
        disable_tqdm=True,
        dataset_num_proc=None,
    )

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.ends = []

        def on_step_end(self, a, state, control, **kw):
            self.ends.append(time.perf_counter())

    timer = StepTimer()
    trainer = SFTTrainer(
        model=model,
        args=cfg,
        train_dataset=train,
        processing_class=tok,
        peft_config=lora,
        callbacks=[timer],
    )

    # Tokens of every micro-batch, attributed to the optimizer step that runs it.
    per_step = []  # [tokens, padded tokens, target tokens, examples] per optimizer step
    orig_compute_loss = trainer.compute_loss

    def compute_loss(model, inputs, *a, **kw):
        k = len(timer.ends)
        while len(per_step) <= k:
            per_step.append([0, 0, 0, 0])
        ids = inputs["input_ids"]
        am = inputs.get("attention_mask")
        per_step[k][0] += int(am.sum()) if am is not None else ids.numel()
        per_step[k][1] += ids.numel()
        per_step[k][2] += int((inputs["labels"][:, 1:] != -100).sum())
        per_step[k][3] += ids.shape[0]
        return orig_compute_loss(model, inputs, *a, **kw)

    trainer.compute_loss = compute_loss

    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    t_train = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - t_train

    if len(timer.ends) < 2:
        sys.exit("need at least 2 steps (one warm-up, one timed)")
    timed = per_step[1 : len(timer.ends)]
    secs = timer.ends[-1] - timer.ends[0]
    n = len(timed)
    tokens = sum(s[0] for s in timed)
    padded = sum(s[1] for s in timed)
    targets = sum(s[2] for s in timed)
    examples = sum(s[3] for s in timed)
    step_times = [b - a for a, b in zip(timer.ends, timer.ends[1:])]
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"versions torch={torch.__version__} transformers={transformers.__version__} trl={trl.__version__} "
        f"peft={peft.__version__} threads={torch.get_num_threads()} cpu_capability={torch.backends.cpu.get_cpu_capability()} "
        f"attn={model.config._attn_implementation}",
        flush=True,
    )
    print(
        f"RESULT trl steps_timed={n} step_s={secs / n:.3f} step_s_min={min(step_times):.3f} "
        f"tokens_per_s={tokens / secs:.1f} target_tokens_per_s={targets / secs:.2f} "
        f"padded_tokens_per_s={padded / secs:.1f} tokens_per_step={tokens / n:.1f} "
        f"target_tokens_per_step={targets / n:.1f} examples_per_step={examples / n:.2f} "
        f"batch={args.batch} accum={args.accum} warmup_step_s={timer.ends[0] - t_train:.3f} "
        f"data_examples={len(rows)} data_tokens={data_tokens} data_tokens_split={split_tokens} "
        f"data_target_tokens={data_targets} trainable={trainable} train_s={train_s:.3f} load_s={load_s:.3f} "
        f"process_s={time.perf_counter() - t_process:.3f} peak_rss_mb={rss_mb:.0f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
