#!/usr/bin/env bash
# Terminology benchmark (make bench-terms): Multi30k test_2016_flickr en->de with a glossary built
# from the test set's sources and references (benchmarks/terms_glossary.sh), translated at beam 5
# without constraints, with the per-line terms as --constraints, and with the glossary under each
# placement (none, bonus, gate): term accuracy, BLEU, chrF, decode sent/s and the share of terms
# linked to their source term (benchmarks/terminology.py). Run it alone.
#   MODEL=bench-out/multi30k/model OUT=bench-out/terms bash benchmarks/terminology.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench-out/terms}
MODEL=${MODEL:-bench-out/multi30k/model}   # make bench-quality's 30-minute default model
PYTHON=${PYTHON:-python3}
[ -e "$MODEL" ] || { echo "[terminology] no model at $MODEL: run make bench-quality, or set MODEL" >&2; exit 2; }
MODEL="$MODEL" PYTHON="$PYTHON" bash benchmarks/terms_glossary.sh "$OUT"
"$PYTHON" benchmarks/terminology.py --model "$MODEL" --source "$OUT/text/test.en" \
  --reference "$OUT/text/test.de" --glossary "$OUT/glossary.tsv" --terms "$OUT/terms.txt" \
  --out "$OUT/runs" ${RUNS:+--runs "$RUNS"} | tee "$OUT/table.md"
