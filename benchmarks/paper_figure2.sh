#!/usr/bin/env bash
# The paper's Figure 2 on Multi30k en->de: RNNencdec (preset rnnencdec: no attention, one
# fixed vector) and RNNsearch (preset default) trained with the same wall-clock budget, the
# test_2016_flickr set translated with beam 5, BLEU per source-length bucket, one line per
# model, and paired bootstrap resampling of RNNsearch against RNNencdec.
# Run it alone: other work on the 2 cores slows training several-fold. UPDATES=N trains each
# model for N updates instead of BUDGET minutes: the same models whatever else the machine does.
#   make bench-figure2     or   BUDGET=15 OUT=bench-out/figure2 bash benchmarks/paper_figure2.sh
#   UPDATES=1000 OUT=bench-out/figure2 bash benchmarks/paper_figure2.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/figure2}
BUDGET=${BUDGET:-15}               # minutes of training per model
UPDATES=${UPDATES:-}               # or: updates per model (wins over BUDGET)
if [ -n "$UPDATES" ]; then
  STOP=(--max-updates "$UPDATES") LENGTH="$UPDATES updates"
else
  STOP=(--time-budget "$BUDGET") LENGTH="$BUDGET min"
fi
BUCKETS=${BUCKETS:-0,8,11,14,17,20,25}  # source words; Multi30k captions are short
mkdir -p "$OUT"
log() { echo "[figure2] $*" >&2; }

log "data: $M30K; budget: $LENGTH per model; output: $OUT"
nmtkit preprocess -s en -t de --trainpref "$M30K/train" --validpref "$M30K/val" \
  --testpref "$M30K/test_2016_flickr" --destdir "$OUT/data" --vocab-size 8000 -q
gzip -dc "$M30K/test_2016_flickr.en.gz" > "$OUT/test.en"
gzip -dc "$M30K/test_2016_flickr.de.gz" > "$OUT/test.de"

for model in rnnencdec:rnnencdec rnnsearch:default; do
  name=${model%%:*} preset=${model#*:}
  log "training $name (preset $preset)"
  nmtkit train "$OUT/data" --save-dir "$OUT/$name" --preset "$preset" \
    "${STOP[@]}" --overwrite -q
  nmtkit translate -m "$OUT/$name" --beam 5 -q < "$OUT/test.en" > "$OUT/test.$name.de"
done

systems=("$OUT/test.rnnencdec.de" "$OUT/test.rnnsearch.de")
names=(--name RNNencdec --name RNNsearch)
nmtkit score -r "$OUT/test.de" "${systems[@]}" "${names[@]}" -M bleu --paired-bs \
  --by-length --source "$OUT/test.en" --buckets "$BUCKETS" --plot "$OUT/figure2.png" \
  2>&1 | tee "$OUT/scores.txt"
nmtkit score -r "$OUT/test.de" "${systems[@]}" "${names[@]}" -M bleu --paired-bs \
  --by-length --source "$OUT/test.en" --buckets "$BUCKETS" --json -q > "$OUT/figure2.json"
log "table and plot: $OUT/figure2.json, $OUT/figure2.png"
