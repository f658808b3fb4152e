#!/usr/bin/env python3
"""Anchor for the WebShop search benchmark: the same catalogue and queries through `bm25s`
(a fast Python BM25, method "lucene", k1 = 0.9, b = 0.4, English stop words, PyStemmer's
Snowball English stemmer; ours is the original Porter stemmer, as Lucene's). Upstream's pyserini needs Java
and a prebuilt index, which this machine cannot fetch, so bm25s stands in as the Python anchor.

    python3 -m venv bench/.venv && bench/.venv/bin/pip install bm25s PyStemmer numpy
    cargo build --release -p quester-envs --example bench_webshop
    bench/.venv/bin/python bench/webshop_anchor.py

Runs our example and the anchor in one go and prints both plus the latency ratio.
"""
import gzip
import json
import os
import re
import subprocess
import time

import bm25s
import Stemmer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def load(name):
    with gzip.open(os.path.join(ROOT, "data", "webshop", name + ".gz"), "rt", encoding="utf-8") as f:
        return json.load(f)


def goals(products, instructions):
    """Goal texts without the price part (enough for recall; the product is what counts)."""
    out = []
    for i, p in enumerate(products):
        ins = instructions.get(p["id"], {})
        if ins.get("instruction") is None:
            continue
        import itertools
        opts = p["product"]["options"]
        names = sorted(opts)
        for combo in itertools.product(*(opts[n] for n in names)):
            text = ", and ".join(f"{n}: {v}" for n, v in zip(names, combo))
            out.append((i, (ins["instruction"] + (" with " + text if text else "")).lower()))
    return out


def anchor():
    products = load("products_1k.json")
    instructions = load("instructions_1k.json")
    t = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    corpus = bm25s.tokenize([p["contents"] for p in products], stopwords="en", stemmer=stemmer,
                            show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    retriever.index(corpus, show_progress=False)
    load_ms = (time.perf_counter() - t) * 1e3
    gs = goals(products, instructions)
    hit10 = hit50 = 0
    lat = []
    for idx, text in gs:
        t = time.perf_counter()
        q = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(q, k=50, show_progress=False, n_threads=1)
        lat.append(time.perf_counter() - t)
        ranked = list(docs[0])
        if idx in ranked:
            hit50 += 1
            if ranked.index(idx) < 10:
                hit10 += 1
    lat.sort()
    mean = sum(lat) / len(lat)
    p95 = lat[min(len(lat) - 1, len(lat) * 95 // 100)]
    return load_ms, hit10 / len(gs), hit50 / len(gs), mean, p95, len(gs)


def main():
    exe = os.path.join(TARGET, "release", "examples", "bench_webshop")
    ours = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    print("== ours (Rust, quester-envs) ==")
    print(ours.strip())
    m = re.search(r"search latency: mean ([\d.]+) us, p95 ([\d.]+) us", ours)
    load_ms, r10, r50, mean, p95, n = anchor()
    print("== anchor (Python bm25s, method=lucene, PyStemmer english) ==")
    print(f"index build {load_ms:.1f} ms; recall@10 {r10:.4f} recall@50 {r50:.4f} ({n} goals, no price text)")
    print(f"search latency: mean {mean * 1e6:.1f} us, p95 {p95 * 1e6:.1f} us")
    if m:
        print(f"ratio anchor/ours: mean {mean * 1e6 / float(m.group(1)):.1f}x, "
              f"p95 {p95 * 1e6 / float(m.group(2)):.1f}x")


if __name__ == "__main__":
    main()
