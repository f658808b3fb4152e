#!/usr/bin/env python3
"""Sentence-embedding throughput of sentence-transformers (all-MiniLM-L6-v2), the anchor of
bench/embeddings.sh; also writes that benchmark's sentences.

    embeddings_reference.py --write-sentences OUT.json [--count N]
        writes N deterministic texts (tip-memory-like: short tips, ScienceWorld / WebShop chat
        transcripts of 10 to ~400 tokens, so some are truncated at 256) as a JSON list.
    embeddings_reference.py MODEL_DIR SENTENCES.json [--batch 32] [--repeats 3] [--threads 2]
        loads MODEL_DIR (the wheel's files, as quester's cache holds them) with
        sentence-transformers on the CPU, encodes the sentences once untimed, then REPEATS times
        timed, and prints one JSON line like the Rust example's.

Needs bench/.venv-embed (see scripts/make_embedding_fixture.py for its versions).
"""

import argparse
import json
import random
import sys
import time


def sentences(count: int) -> list:
    rng = random.Random(0)
    objects = ["beaker", "thermometer", "stove", "fridge", "sink", "seed", "flower pot",
               "red shoes", "laptop sleeve", "coffee mug", "deodorant", "bluetooth speaker"]
    rooms = ["kitchen", "greenhouse", "workshop", "hallway", "bathroom", "living room"]
    verbs = ["open", "close", "pick up", "move", "look at", "activate", "focus on", "search",
             "click", "buy"]
    tips = [
        "Tip: check the {o} before you {v} anything in the {r}.",
        "Tip: when the {o} is missing, search the {r} first.",
        "Lesson: {v} the {o} only after reading the instruction twice.",
        "Avoid repeating `{v} {o}`; it failed {n} times in the {r}.",
    ]
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            t = rng.choice(tips)
            out.append(t.format(o=rng.choice(objects), v=rng.choice(verbs), r=rng.choice(rooms),
                                n=rng.randint(2, 9)))
        else:
            turns = rng.randint(1, 3) if kind < 3 else rng.randint(6, 14)
            parts = []
            for _ in range(turns):
                parts.append(
                    f"user: You are in the {rng.choice(rooms)}. You see a {rng.choice(objects)}, "
                    f"a {rng.choice(objects)} and a {rng.choice(objects)}; the temperature is "
                    f"{rng.randint(-10, 120)} degrees. assistant: Thought: I need the "
                    f"{rng.choice(objects)}. Action: {rng.choice(verbs)} {rng.choice(objects)}")
            out.append("\n".join(parts))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("model_dir", nargs="?")
    ap.add_argument("sentences", nargs="?")
    ap.add_argument("--write-sentences")
    ap.add_argument("--count", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.write_sentences:
        with open(args.write_sentences, "w") as f:
            json.dump(sentences(args.count), f, ensure_ascii=False)
        return
    if not (args.model_dir and args.sentences):
        ap.error("MODEL_DIR and SENTENCES.json are needed")

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    texts = json.load(open(args.sentences))
    model = SentenceTransformer(args.model_dir, device="cpu")
    model.eval()
    kw = dict(batch_size=args.batch, convert_to_numpy=True, show_progress_bar=False)
    with torch.inference_mode():
        model.encode(texts, **kw)
        times = []
        for _ in range(max(1, args.repeats)):
            t = time.perf_counter()
            out = model.encode(texts, **kw)
            times.append(time.perf_counter() - t)
    assert out.shape == (len(texts), 384), out.shape
    mean = sum(times) / len(times)
    print(json.dumps({
        "impl": "sentence-transformers", "sentences": len(texts), "batch": args.batch,
        "threads": torch.get_num_threads(), "best_s": round(min(times), 4),
        "mean_s": round(mean, 4), "sentences_per_s": round(len(texts) / mean, 2),
        "versions": {"torch": torch.__version__,
                     "sentence_transformers": sys.modules["sentence_transformers"].__version__},
    }))


if __name__ == "__main__":
    main()
