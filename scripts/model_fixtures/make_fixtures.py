#!/usr/bin/env python3
"""Makes the reference fixtures of quester-model's tests (run once; tests never need Python).

  (a) default_logprobs.json: the default GGUF (SmolLM2-135M-Instruct Q4_1) loaded and dequantised
      by Hugging Face transformers (gguf_file=...), run in float32; per-token log-probs of a few
      texts, with the chat template rendered by jinja2 from the GGUF metadata.
  (b) tiny-{llama,qwen2,qwen3}/: tiny random models saved as HF safetensors directories, with a
      byte-level tokenizer.json and expected.json holding log-probs of a padded batch.
  (c) token_ids.json: llama.cpp token ids (llama-cpp-python, tokenize(add_bos=False, special=True))
      of chat-templated and arbitrary texts; falls back to transformers' GGUF tokenizer if
      llama_cpp is not importable (the file records which reference was used).

Usage: make_fixtures.sh (creates the venvs), or
  python make_fixtures.py --gguf PATH --out crates/quester-model/tests/fixtures [--tokens-only]
"""
import argparse
import json
import os
import sys

TEXTS = [
    "The capital of France is Paris. It is known for the Eiffel Tower.",
    "def add(a, b):\n    return a + b\n\nprint(add(12345, 678))",
    "Ünïcödé – naïve café, 東京, emoji 🎉 and numbers 3.14159 / 2026-11-30.",
]
CHATS = [
    [{"role": "user", "content": "What is 2+3?"}],
    [
        {"role": "system", "content": "You play Sokoban. Answer with <action>up</action>."},
        {"role": "user", "content": "Grid:\n#####\n#@$.#\n#####\nYour move?"},
        {"role": "assistant", "content": "<think>Push right.</think><action>right</action>"},
    ],
]
TOKEN_TEXTS = TEXTS + [
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "  leading spaces and\ttabs\n\n\nnewlines   ",
    "1234567890 12 3 x1y22z333",
    "<think>hmm</think> <|endoftext|> <|im_end|>",
    "for (int i = 0; i < n; ++i) { s += a[i] * 2; } // C++",
    "Привет мир! Γειά σου κόσμε! مرحبا بالعالم",
    "What",
    "",
]


def render_chat(template_src, messages, add_generation_prompt):
    import jinja2

    env = jinja2.Environment()
    return env.from_string(template_src).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token="", eos_token=""
    )


def gguf_chat_template(gguf_path):
    import gguf

    r = gguf.GGUFReader(gguf_path)
    f = r.fields["tokenizer.chat_template"]
    return bytes(f.parts[f.data[0]]).decode("utf-8")


def llama_cpp_tokenizer(gguf_path):
    try:
        from llama_cpp import Llama
    except ImportError:
        return None, None
    llm = Llama(model_path=gguf_path, vocab_only=True, verbose=False)
    return (lambda t: llm.tokenize(t.encode("utf-8"), add_bos=False, special=True)), "llama.cpp"


def hf_tokenizer(gguf_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    return (lambda t: tok.encode(t, add_special_tokens=False)), "transformers-gguf"


def make_token_ids(gguf_path, out):
    tokenize, source = llama_cpp_tokenizer(gguf_path)
    if tokenize is None:
        tokenize, source = hf_tokenizer(gguf_path)
    tmpl = gguf_chat_template(gguf_path)
    texts = list(TOKEN_TEXTS) + [render_chat(tmpl, c, g) for c in CHATS for g in (False, True)]
    cases = [{"text": t, "ids": list(map(int, tokenize(t)))} for t in texts]
    with open(os.path.join(out, "token_ids.json"), "w") as f:
        json.dump({"reference": source, "cases": cases}, f, ensure_ascii=False, indent=1)
    print(f"token_ids.json: {len(cases)} cases from {source}")
    return tokenize


def make_default_logprobs(gguf_path, out, tokenize):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path), torch_dtype=torch.float32
    )
    model.eval()
    tmpl = gguf_chat_template(gguf_path)
    chats = []
    for c in CHATS:
        chats.append({"messages": c, "add_generation_prompt": False, "rendered": render_chat(tmpl, c, False)})
        chats.append({"messages": c, "add_generation_prompt": True, "rendered": render_chat(tmpl, c, True)})
    texts = TEXTS + [chats[2]["rendered"]]
    cases = []
    for t in texts:
        ids = tokenize(t)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].double()
        lp = torch.log_softmax(logits, -1)[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
        cases.append({"text": t, "ids": list(map(int, ids)), "logprobs": lp.tolist()})
    # Greedy answer to the test question, as a reference for the generation test.
    prompt = tokenize(render_chat(tmpl, CHATS[0], True))
    with torch.no_grad():
        gen = model.generate(torch.tensor([prompt]), max_new_tokens=16, do_sample=False)
    greedy = list(map(int, gen[0][len(prompt):]))
    with open(os.path.join(out, "default_logprobs.json"), "w") as f:
        json.dump(
            {"reference": "transformers float32 from GGUF", "cases": cases, "chats": chats,
             "greedy_prompt_ids": list(map(int, prompt)), "greedy_ids": greedy},
            f, ensure_ascii=False, indent=1,
        )
    print("default_logprobs.json:", len(cases), "cases; greedy", greedy)


def byte_tokenizer_json(specials):
    # GPT-2 byte-to-unicode table, so the byte-level pre-tokenizer's symbols are the vocabulary.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, [chr(c) for c in cs]))
    vocab = {table[b]: b for b in range(256)}
    added = []
    for i, s in enumerate(specials):
        vocab[s] = 256 + i
        added.append({"id": 256 + i, "content": s, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": []},
    }


def make_tiny(out):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = 256 + len(specials)
    common = dict(vocab_size=vocab, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=500.0,
                  max_position_embeddings=256)
    flavours = {
        "llama": (LlamaConfig(**common, tie_word_embeddings=True), LlamaForCausalLM),
        "qwen2": (Qwen2Config(**common, tie_word_embeddings=False), Qwen2ForCausalLM),
        "qwen3": (Qwen3Config(**common, head_dim=8, tie_word_embeddings=True), Qwen3ForCausalLM),
    }
    ids = [[72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 257, 258],
           [0, 0, 0, 0, 257, 117, 115, 101, 114, 10, 50, 43, 51, 258]]
    mask = [[1] * 14, [0] * 4 + [1] * 10]
    for i, (name, (cfg, cls)) in enumerate(flavours.items()):
        torch.manual_seed(1234 + i)
        cfg._attn_implementation = "eager"
        model = cls(cfg).float().eval()
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if "norm" in pname:
                    p.copy_(1.0 + 0.1 * torch.randn_like(p))
                elif "embed" in pname:
                    p.copy_(torch.randn_like(p))
                else:
                    p.copy_(0.2 * torch.randn_like(p))
        d = os.path.join(out, f"tiny-{name}")
        os.makedirs(d, exist_ok=True)
        model.save_pretrained(d, safe_serialization=True)
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            json.dump(byte_tokenizer_json(specials), f)
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"eos_token": "<|im_end|>", "chat_template":
                       "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                       "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}, f)
        t_ids = torch.tensor(ids)
        t_mask = torch.tensor(mask)
        pos = (t_mask.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = model(input_ids=t_ids, attention_mask=t_mask, position_ids=pos).logits.double()
        lp = torch.log_softmax(logits, -1)[:, :-1].gather(2, t_ids[:, 1:, None])[..., 0]
        # Padding targets, and targets predicted from a padding position, have no log-prob.
        lp = lp * t_mask[:, 1:] * t_mask[:, :-1]
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump({"ids": ids, "mask": mask, "logprobs": lp.tolist()}, f)
        print(f"tiny-{name}: saved")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens-only", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tokenize = make_token_ids(a.gguf, a.out)
    if a.tokens_only:
        return
    make_default_logprobs(a.gguf, a.out, tokenize)
    make_tiny(a.out)


if __name__ == "__main__":
    sys.exit(main())
