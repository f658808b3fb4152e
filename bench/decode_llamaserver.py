#!/usr/bin/env python3
"""llama-server anchor for bench/decode.sh: the same N chat prompts as decode_llamacpp.py, sent
at once to a llama-server started with N parallel slots (continuous batching), greedy, M new
tokens each (EOS ignored). Prints generated tokens / wall seconds. Standard library only.

Usage: decode_llamaserver.py PORT [N=32] [M=128] [REQUEST_TIMEOUT_S=600]
The server must listen on 127.0.0.1:PORT; nothing else is contacted. With SERVER_PID set, a
server that dies while loading is reported at once instead of after the ready deadline.
"""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

TOPICS = ["the sea", "a robot", "winter", "a lost key", "the moon", "a library", "rain", "a chess game"]


def post(url, body, timeout):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_ready(base, deadline_s=120):
    # /health answers 503 while the model loads, 200 once slots are ready.
    end = time.time() + deadline_s
    pid = os.environ.get("SERVER_PID")
    while time.time() < end:
        if pid and not os.path.exists(f"/proc/{pid}"):
            sys.exit("llama-server exited before it was ready (see its log)")
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    sys.exit(f"llama-server on {base} not ready after {deadline_s}s")


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    m = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 600.0
    base = f"http://127.0.0.1:{port}"
    wait_ready(base)

    def body(text, n_predict):
        # Greedy as in decode_llamacpp.py (top_k 1, temperature 0); no prompt cache, so every
        # request prefills its whole prompt like the sequential anchor does.
        return {"prompt": text, "n_predict": n_predict, "ignore_eos": True, "temperature": 0.0,
                "top_k": 1, "cache_prompt": False, "stream": False}

    prompts = [
        f"<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWrite a short story number {i} about {TOPICS[i % len(TOPICS)]}.<|im_end|>\n<|im_start|>assistant\n"
        for i in range(n)
    ]
    # One short untimed request: the first one pays for page faults on the mmapped weights.
    post(base + "/completion", body(prompts[0], 4), timeout)

    results = [None] * n
    errors = []

    def worker(i):
        try:
            results[i] = post(base + "/completion", body(prompts[i], m), timeout)
        except Exception as e:  # reported below; the run then fails
            errors.append(f"request {i}: {e!r}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    t = time.time()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    secs = time.time() - t
    if errors:
        sys.exit("llama-server requests failed: " + "; ".join(errors[:5]))
    new = sum(r.get("tokens_predicted", 0) for r in results)
    prompt_tokens = sum(r.get("tokens_evaluated", 0) for r in results)
    if new != n * m:
        # Shown with the figure: a slot whose context filled up stops early.
        print(f"warning: {new} tokens generated, expected {n * m}")
    print(f"llama-server: {n} sequences x {m} tokens ({prompt_tokens} prompt tokens), {n} parallel slots: "
          f"{new} new tokens in {secs:.2f}s = {new / secs:.1f} tok/s")


if __name__ == "__main__":
    main()
