#!/usr/bin/env python3
"""llama.cpp anchor for bench/decode.sh: the same N chat prompts decoded one after another,
greedy, M new tokens each (EOS ignored), same GGUF. Prints tokens/s."""
import sys
import time

from llama_cpp import Llama

TOPICS = ["the sea", "a robot", "winter", "a lost key", "the moon", "a library", "rain", "a chess game"]


def main():
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    m = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    llm = Llama(model_path=path, n_ctx=512, n_batch=512, n_threads=threads, verbose=False)
    prompts = []
    for i in range(n):
        text = f"<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWrite a short story number {i} about {TOPICS[i % len(TOPICS)]}.<|im_end|>\n<|im_start|>assistant\n"
        prompts.append(llm.tokenize(text.encode(), add_bos=False, special=True))
    t = time.time()
    new = 0
    for p in prompts:
        llm.reset()
        for k, _tok in enumerate(llm.generate(p, top_k=1, temp=0.0, reset=True)):
            new += 1
            if k + 1 >= m:
                break
    secs = time.time() - t
    print(f"llama.cpp: {n} sequences x {m} tokens ({sum(map(len, prompts))} prompt tokens), one after another: "
          f"{new} new tokens in {secs:.2f}s = {new / secs:.1f} tok/s")


if __name__ == "__main__":
    main()
