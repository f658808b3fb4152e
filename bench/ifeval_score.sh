#!/usr/bin/env bash
# IFEval scoring speed: quester-ifeval vs lm-evaluation-harness 0.4.13's scorer, one run each,
# strict + loose, on the same 541-response file.
#
#   bench/ifeval_score.sh [RESPONSES.jsonl]
#
# Without an argument the file is the first synthetic attempt per prompt of the fixture corpus
# (crates/quester-ifeval/tests/fixtures/make_corpus.py). Python packages are pinned and
# installed by scripts/ifeval_reference.py; that script loads lm-eval's ifeval modules
# directly and times only the scoring loop, as the Rust example does.
set -euo pipefail
cd "$(dirname "$0")/.."

file="${1:-}"
if [[ -z "$file" ]]; then
  corpus=target/ifeval-corpus
  python3 crates/quester-ifeval/tests/fixtures/make_corpus.py "$corpus" 2>/dev/null
  file="$corpus/bench_541.jsonl"
  # Attempts come three per prompt: keep the first of each.
  awk 'NR % 3 == 1' "$corpus/synthetic_attempts.jsonl" > "$file"
fi
echo "responses: $file ($(wc -l < "$file") lines)"

cargo build --release -q -p quester-ifeval --example score_responses
ours_all=$(target/release/examples/score_responses "$file")
ours=${ours_all%%$'\n'*}
theirs=$(python3 scripts/ifeval_reference.py --bench "$file" 2>/dev/null)
echo "$ours"
echo "$theirs"
t_ours=$(sed -E 's/.* in ([0-9.]+) s.*/\1/' <<<"$ours")
t_theirs=$(sed -E 's/.* in ([0-9.]+) s.*/\1/' <<<"$theirs")
echo
echo "$ours_all" | tail -n +2
python3 -c "print(f'speed-up: {float($t_theirs) / max(float($t_ours), 1e-9):.1f}x (lm-eval time / quester-ifeval time)')"
