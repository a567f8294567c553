#!/usr/bin/env bash
# The main job end to end on Multi30k English->German, in under 10 minutes on 2 cores:
# preprocess, train for a short budget, translate the test set with beam 5, score it,
# show five translations beside their references, and draw an attention heatmap.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${DEMO_DIR:-demo}
BUDGET=${DEMO_MINUTES:-6}
mkdir -p "$OUT"

echo "== data: $M30K"
nmtkit preprocess -s en -t de --trainpref "$M30K/train" --validpref "$M30K/val" \
  --testpref "$M30K/test_2016_flickr" --destdir "$OUT/data" --vocab-size 8000

echo "== train: default RNNsearch, $BUDGET minutes"
nmtkit train "$OUT/data" --save-dir "$OUT/model" --time-budget "$BUDGET" --overwrite \
  --set train.validate_every=250

echo "== translate test_2016_flickr (beam 5)"
gzip -dc "$M30K/test_2016_flickr.en.gz" > "$OUT/test.en"
gzip -dc "$M30K/test_2016_flickr.de.gz" > "$OUT/test.de"
nmtkit translate -m "$OUT/model" < "$OUT/test.en" > "$OUT/test.hyp.de"

echo "== score"
nmtkit score -r "$OUT/test.de" -i "$OUT/test.hyp.de"

echo "== five translations"
for i in 1 2 3 4 5; do
  echo "SRC: $(sed -n "${i}p" "$OUT/test.en")"
  echo "REF: $(sed -n "${i}p" "$OUT/test.de")"
  echo "HYP: $(sed -n "${i}p" "$OUT/test.hyp.de")"
  echo
done

echo "== attention heatmap"
nmtkit align -m "$OUT/model" --source "$OUT/test.en" --target "$OUT/test.hyp.de" --limit 1 \
  --plot "$OUT/heatmaps" --output "$OUT/test.align"
echo "alignment (Pharaoh): $(head -1 "$OUT/test.align")"
echo "heatmap: $OUT/heatmaps/00001.png"
