#!/usr/bin/env bash
# Speed benchmark (issue: training and translation at this machine's limit): the roofline,
# training throughput and peak memory of the default RNNsearch on Multi30k en->de, translation
# speed of test_2016_flickr with beam 5 and greedy (whole command and decode only), streaming
# memory. Writes bench-out/speed/speed.json and prints a table. Run it alone (~10 minutes).
#   make bench-speed
#   MODEL=bench-out/figure2/rnnsearch bash benchmarks/speed.sh   # translate a trained model
#   bash benchmarks/speed.sh --set train.threads=1               # any speed.py option
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/speed}
DATA=${DATA:-bench-out/data.en-de}
mkdir -p "$OUT"
if [ ! -f "$DATA/manifest.json" ]; then
  echo "[speed] preprocessing $M30K into $DATA" >&2
  nmtkit preprocess -s en -t de --trainpref "$M30K/train" --validpref "$M30K/val" \
    --destdir "$DATA" --vocab-size 8000 -q
fi
model=()
[ -n "${MODEL:-}" ] && model=(--model "$MODEL")
python benchmarks/speed.py --data "$DATA" --test "$M30K/test_2016_flickr.en.gz" \
  --ref "$M30K/test_2016_flickr.de.gz" --out "$OUT" "${model[@]}" "$@"
