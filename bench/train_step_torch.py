"""PyTorch + transformers (eager) anchor for one PPO training step: same weights, same batch,
same loss as crates/quester-model/examples/bench_train_step.rs.

Usage: train_step_torch.py MODEL_DIR --mode full|lora --batch 8 --seq 256 --prompt 64 [--group 1] --steps 2
                           [--autocast off|bf16]
Prints one line `RESULT torch mode=... step_s=... peak_rss_mb=... loss=... autocast=...`.

--autocast bf16 runs the forward pass and the loss under torch.autocast("cpu", bfloat16): the
matmuls run in bf16 while the master weights, gradients and AdamW stay f32 (the usual
mixed-precision recipe), so it anchors a bf16 compute path of ours.
"""

import argparse
import contextlib
import math
import resource
import time

import torch
from transformers import AutoModelForCausalLM


def batch_tensors(b, t, prompt, vocab, group=1):
    # The same deterministic batch as the Rust example (see make_batch there): the prompt part
    # of a row comes from the first row of its group.
    def key(r, j):
        return r // group * group if j < prompt else r

    ids = torch.tensor(
        [[(key(r, j) * 7919 + j * 104729 + 13) % vocab for j in range(t)] for r in range(b)],
        dtype=torch.long,
    )
    adv = torch.tensor([1.0 if r % 2 == 0 else -1.0 for r in range(b)]).unsqueeze(1)
    old = torch.full((b, t - prompt), -math.log(vocab))
    return ids, adv, old


def ppo_loss(logp, old, adv, clip_low=0.2, clip_high=0.2, dual=3.0):
    ratio = torch.exp(torch.clamp(logp - old, -20.0, 20.0))
    l1 = -adv * ratio
    l2 = -adv * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    l = torch.maximum(l1, l2)
    l = torch.where(adv < 0, torch.minimum(l, -adv * dual), l)
    return l.sum() / l.numel()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--mode", default="full", choices=["full", "lora"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--group", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--autocast", default="off", choices=["off", "bf16"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(
        a.model_dir, dtype=torch.float32, attn_implementation="eager"
    )
    model.train()
    if a.mode == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(
                r=16,
                lora_alpha=32,
                lora_dropout=0.0,
                target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
            ),
        )
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-6, weight_decay=0.01)
    vocab = model.config.vocab_size
    ids, adv, old = batch_tensors(a.batch, a.seq, a.prompt, vocab, max(1, a.group))
    mask = torch.ones_like(ids)

    def region():
        if a.autocast == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    # Proof that the region does what it says: the dtype a Linear layer outputs in the warm-up
    # step (bf16 under autocast, f32 otherwise), printed once.
    seen = {}
    first_linear = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))

    def record(_module, _inputs, out):
        seen.setdefault("dtype", out.dtype)  # returns None, so the output is left as it is

    hook = first_linear.register_forward_hook(record)
    times = []
    loss_v = float("nan")
    for step in range(a.steps + 1):
        t0 = time.perf_counter()
        with region():
            logits = model(input_ids=ids, attention_mask=mask).logits
            # Head output is needed only for positions predicting completion tokens. The
            # log-softmax runs in f32 (a no-op cast without autocast): bf16 log-probs would be
            # too coarse for the PPO ratio.
            lp = torch.log_softmax(logits[:, a.prompt - 1 : -1, :].float(), dim=-1)
            logp = lp.gather(-1, ids[:, a.prompt :].unsqueeze(-1)).squeeze(-1)
            loss = ppo_loss(logp, old, adv)
        # Backward outside the region, as autocast recommends; gradients land in f32.
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        loss_v = loss.item()
        if step == 0:
            hook.remove()
            print(f"torch autocast={a.autocast}: Linear output dtype {seen.get('dtype')}", flush=True)
        if step > 0:  # the first step warms allocators and is not timed
            times.append(dt)
        print(f"torch {a.mode} step {step}: {dt:.2f} s loss {loss_v:.6f}", flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"RESULT torch mode={a.mode} step_s={sum(times) / len(times):.3f} "
        f"peak_rss_mb={peak_mb:.0f} loss={loss_v:.6f} autocast={a.autocast}",
        flush=True,
    )


if __name__ == "__main__":
    main()
