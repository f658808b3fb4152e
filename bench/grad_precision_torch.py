"""PyTorch's own bf16-autocast gradient error on the sequence of our bf16_precision test (the
same 55 tokens): full
fine-tuning gradients of the summed next-token log-probs under torch.autocast(bf16) against
f32, tensor by tensor (relative error of the whole tensor), the anchor for our tolerance."""
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer

d = sys.argv[1]
tok = AutoTokenizer.from_pretrained(d)
prompt = tok.apply_chat_template([{"role": "user", "content": "Write a haiku about rain."}], tokenize=False, add_generation_prompt=True)
ids = tok(prompt, add_special_tokens=False)["input_ids"] + tok("Soft rain on the roof, a quiet song for the night, the garden drinks deep.", add_special_tokens=False)["input_ids"]
x = torch.tensor([ids])
torch.manual_seed(0)

def grads(attn, bf16):
    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation=attn)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = m(x).logits
    lp = torch.log_softmax(logits.float()[0, :-1], -1).gather(1, x[0, 1:, None])
    (-lp.sum()).backward()
    return {n: p.grad.detach().clone() for n, p in m.named_parameters()}

for attn in ["eager", "sdpa"]:
    g32, g16 = grads(attn, False), grads(attn, True)
    rel = sorted(((g16[n] - g32[n]).norm().item() / max(g32[n].norm().item(), 1e-30), n) for n in g32)
    print(f"{attn}: {len(ids)} tokens, {len(rel)} tensors: worst relative error {rel[-1][0]:.3e} ({rel[-1][1]}), median {rel[len(rel)//2][0]:.3e}")
