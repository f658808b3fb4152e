#!/usr/bin/env python3
"""Load for bench/serve.sh: C concurrent clients each send R chat requests one after another
(non-streamed, greedy) to an OpenAI-compatible server, with mixed prompt lengths and token
limits, the same schedule for every server. Prints the completion tokens over the wall time
and each request's latency at p50 and p99. Standard library only.

Usage: serve_load.py BASE_URL [CLIENTS=32] [REQUESTS=8] [MODEL=default] [TIMEOUT_S=900]
BASE_URL ends in /v1 (e.g. http://127.0.0.1:8080/v1).
"""
import json
import sys
import threading
import time
import urllib.request

TOPICS = ["the sea", "a robot", "winter", "a lost key", "the moon", "a library", "rain", "a chess game"]
# Mixed lengths: request (c, i) takes its prompt repeat and token limit from these by index.
REPEATS = [1, 2, 4, 8]
MAX_TOKENS = [16, 48, 96, 192]


def request_body(model, c, i):
    k = c * 131 + i * 17
    text = f"Write a short story number {c}-{i} about {TOPICS[k % len(TOPICS)]}. " * REPEATS[k % len(REPEATS)]
    return {
        "model": model,
        "messages": [{"role": "user", "content": text.strip()}],
        "temperature": 0,
        "max_tokens": MAX_TOKENS[(k // 4) % len(MAX_TOKENS)],
    }


def main():
    base = sys.argv[1].rstrip("/")
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    requests = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    model = sys.argv[4] if len(sys.argv) > 4 else "default"
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 900
    latencies, tokens, errors = [], [0], []
    lock = threading.Lock()

    def client(c):
        for i in range(requests):
            body = json.dumps(request_body(model, c, i)).encode()
            req = urllib.request.Request(base + "/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
            t = time.perf_counter()
            try:
                with urllib.request.urlopen(req, timeout=timeout) as r:
                    reply = json.loads(r.read())
            except Exception as e:  # reported below; the run then fails
                with lock:
                    errors.append(f"client {c} request {i}: {e}")
                return
            dt = time.perf_counter() - t
            with lock:
                latencies.append(dt)
                tokens[0] += reply["usage"]["completion_tokens"]

    # One warm-up request (first-request costs such as weight packing stay out of the figure).
    warm = urllib.request.Request(base + "/chat/completions",
                                  data=json.dumps(request_body(model, 0, 0)).encode(),
                                  headers={"Content-Type": "application/json"})
    urllib.request.urlopen(warm, timeout=timeout).read()
    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    if errors:
        sys.exit("FAILED: " + "; ".join(errors[:5]))
    latencies.sort()
    pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    print(f"{clients} clients x {requests} requests: {len(latencies)} answered, {tokens[0]} completion tokens "
          f"in {wall:.1f}s; latency p50 {pct(0.50):.2f}s p99 {pct(0.99):.2f}s = {tokens[0] / wall:.1f} tok/s")


if __name__ == "__main__":
    main()
