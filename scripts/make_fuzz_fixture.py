#!/usr/bin/env python3
"""Builds the WebShop parity fixtures used by crates/quester-envs/tests/webshop_*.rs.

Run in a virtual environment with rapidfuzz, thefuzz and nltk from PyPI:
    python3 -m venv /tmp/fuzzvenv && /tmp/fuzzvenv/bin/pip install rapidfuzz thefuzz nltk
    /tmp/fuzzvenv/bin/python scripts/make_fuzz_fixture.py

Writes, under crates/quester-envs/tests/fixtures/:
- webshop_fuzz.json: >= 200 string pairs with rapidfuzz 3 `fuzz.token_set_ratio` (no processor),
  `utils.default_process` of each side, and thefuzz's `token_set_ratio` (what upstream calls).
- webshop_pyrandom.json: CPython `random` outputs (seeded MT19937, shuffle, sample, uniform).
- webshop_porter.json: 3000 catalogue words and their stems by NLTK's PorterStemmer in
  MARTIN_EXTENSIONS mode (Martin Porter's reference implementation, which Lucene's
  PorterStemFilter follows).
- webshop_goals.json: the synthetic goals generated from the shipped catalogue the way upstream
  WebShop does with CPython's `random` (seed 42 for prices and price bounds, seed 233 for the
  shuffle), written independently here from the spec in /work/shared/specs/envs.md.
"""
import gzip
import itertools
import json
import os
import random
import re
import sys

import rapidfuzz
from rapidfuzz import fuzz, utils
from thefuzz import fuzz as thefuzz_fuzz

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "quester-envs", "tests", "fixtures")


def load(name):
    with gzip.open(os.path.join(ROOT, "data", "webshop", name + ".gz"), "rt", encoding="utf-8") as f:
        return json.load(f)


def fuzz_pairs(products, instructions):
    rng = random.Random(7)
    attrs = sorted({a for v in instructions.values() for a in v.get("attributes", [])})
    titles = [p["product"]["Title"] for p in products]
    opts = sorted({o for p in products for vs in p["product"]["options"].values() for o in vs})
    pairs = []
    # Real attributes against each other and against titles.
    for _ in range(70):
        pairs.append((rng.choice(attrs), rng.choice(attrs)))
    for _ in range(30):
        a = rng.choice(attrs)
        pairs.append((a, a + " " + rng.choice(attrs)))
    for _ in range(30):
        pairs.append((rng.choice(titles), rng.choice(attrs)))
    # Option values against each other (what the option reward compares).
    for _ in range(50):
        pairs.append((rng.choice(opts), rng.choice(opts)))
    # Hand-made edge cases: empty, whitespace, case, punctuation, unicode, repeats.
    pairs += [
        ("", ""), ("", "a"), ("a", ""), ("   ", "a"), ("a", "a"), ("A", "a"),
        ("x-large", "x large"), ("X-Large", "x-large"), ("red, blue", "blue red"),
        ("new york", "new york mets"), ("new york mets", "new york yankees"),
        ("fuzzy wuzzy was a bear", "wuzzy fuzzy was a bear"),
        ("café crème", "cafe creme"), ("naïve résumé", "naive resume"),
        ("日本 茶", "茶 日本"), ("Straße", "strasse"), ("İstanbul", "istanbul"),
        ("ÉCOLE", "école"), ("emoji 😀 smile", "smile 😀"), ("a\u00a0b", "a b"),
        ("tab\tsep", "sep tab"), ("line\nbreak", "break line"), ("x\u001cy", "x y"),
        ("3.5 oz", "3.5oz"), ("pack of 12", "12 pack"), ("pack of 12", "pack of 1"),
        ("light grey", "grey"), ("dark grey", "light grey"), ("b b b", "b"),
        ("a b c d", "a b c e"), ("abc", "abd"), ("12", "21"),
        ("women's", "womens"), ("long-lasting", "long lasting"),
        ("(size) [small]", "size small"), ("ﬁne", "fine"), ("Ωmega", "ωmega"),
        ("\u00e9t\u00e9", "e\u0301te\u0301"), ("100% cotton", "cotton 100"),
        ("¼ inch", "1/4 inch"), ("µm", "μm"),
    ]
    rows = []
    for a, b in pairs:
        rows.append({
            "a": a,
            "b": b,
            "rapidfuzz": fuzz.token_set_ratio(a, b),
            "processed_a": utils.default_process(a),
            "thefuzz": thefuzz_fuzz.token_set_ratio(a, b),
        })
    return rows


def pyrandom_cases():
    out = {}
    r = random.Random(0)
    out["seed0_u32"] = [r.getrandbits(32) for _ in range(5)]
    r = random.Random(42)
    out["seed42_random"] = [r.random() for _ in range(5)]
    r = random.Random(2**40 + 5)
    out["seed_big_u32"] = [r.getrandbits(32) for _ in range(3)]
    r = random.Random(233)
    x = list(range(50))
    r.shuffle(x)
    out["seed233_shuffle50"] = x
    r = random.Random(42)
    out["seed42_samples"] = [r.sample([10.0, 20.0, 30.0, 40.0], 2) for _ in range(10)]
    out["seed42_then_uniform"] = [r.uniform(17.99, 19.99) for _ in range(3)]
    return out


PRICE_RANGE = [10.0 * i for i in range(1, 100)]


def goals(products, instructions):
    rng = random.Random(42)
    prices = {}
    for p in products:
        pricing = p["product"]["pricing"] or [100.0]
        prices[p["id"]] = pricing[0] if len(pricing) == 1 else rng.uniform(*pricing[:2])
    out = []
    for p in products:
        ins = instructions.get(p["id"], {})
        if ins.get("instruction") is None:
            continue
        price = prices[p["id"]]
        above = [v for v in PRICE_RANGE if v > price][:4]
        if len(above) >= 2:
            _, upper = sorted(rng.sample(above, 2))
            price_text = f", and price lower than {upper:.2f} dollars"
        else:
            upper, price_text = 1000000, ""
        options = p["product"]["options"]
        names = sorted(options)
        for combo in itertools.product(*(options[n] for n in names)):
            chosen = dict(zip(names, combo))
            text = ", and ".join(f"{k}: {v}" for k, v in chosen.items())
            text = " with " + text if text else ""
            out.append({"asin": p["id"], "text": ins["instruction"] + text + price_text,
                        "price_upper": float(upper)})
    random.Random(233).shuffle(out)
    return {"count": len(out), "first": out[:40], "every_97th": out[::97],
            "range_prices": {a: v for a, v in prices.items()
                             if len(next(p for p in products if p["id"] == a)["product"]["pricing"]) > 1}}


def porter_words(products):
    from nltk.stem.porter import PorterStemmer
    stemmer = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)
    vocab = sorted({w for p in products for w in re.findall(r"[^\W\d_]+", p["contents"].lower())})
    words = random.Random(11).sample(vocab, min(3000, len(vocab)))
    words += ["ing", "ies", "sses", "eed", "y", "yy", "syzygy", "archaeology", "possibly"]
    return {w: stemmer.stem(w, to_lowercase=False) for w in words}


def main():
    products = load("products_1k.json")
    instructions = load("instructions_1k.json")
    os.makedirs(OUT, exist_ok=True)
    meta = {"python": sys.version.split()[0], "rapidfuzz": rapidfuzz.__version__}
    with open(os.path.join(OUT, "webshop_fuzz.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "pairs": fuzz_pairs(products, instructions)}, f, ensure_ascii=False, indent=0)
    with open(os.path.join(OUT, "webshop_pyrandom.json"), "w") as f:
        json.dump(pyrandom_cases(), f, indent=0)
    with open(os.path.join(OUT, "webshop_porter.json"), "w", encoding="utf-8") as f:
        json.dump(porter_words(products), f, ensure_ascii=False, indent=0, sort_keys=True)
    with open(os.path.join(OUT, "webshop_goals.json"), "w", encoding="utf-8") as f:
        json.dump(goals(products, instructions), f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
