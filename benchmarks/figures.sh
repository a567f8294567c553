#!/usr/bin/env bash
# The pictures in README.md and docs/, remade from real runs: the paper's Figure 2 (BLEU by
# source length, RNNencdec against RNNsearch), Figure 3 (attention heatmaps of the RNNsearch
# model on test sentences), and the training curves of both models (validation BLEU and
# training loss over updates). The models train for a fixed number of updates, so the
# figures do not depend on what else the machine is doing; only the wall time does.
#   make figures     or   UPDATES=1000 FIGURES=docs/figures bash benchmarks/figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench-out/figures}
FIGURES=${FIGURES:-docs/figures}
export UPDATES=${UPDATES:-1000} OUT
LINES=${LINES:-11,29,84}           # test_2016_flickr lines (1-based) drawn as heatmaps
mkdir -p "$OUT" "$FIGURES"
log() { echo "[figures] $*" >&2; }

bash benchmarks/paper_figure2.sh

log "attention heatmaps of test lines $LINES"
: > "$OUT/fig3.en"; : > "$OUT/fig3.de"
for n in ${LINES//,/ }; do
  sed -n "${n}p" "$OUT/test.en" >> "$OUT/fig3.en"
  sed -n "${n}p" "$OUT/test.rnnsearch.de" >> "$OUT/fig3.de"
done
rm -rf "$OUT/heatmaps"
nmtkit align -m "$OUT/rnnsearch" --source "$OUT/fig3.en" --target "$OUT/fig3.de" \
  --plot "$OUT/heatmaps" --output "$OUT/fig3.align" -q

log "training curves"
python benchmarks/plot_training.py --out "$OUT/training.png" \
  RNNencdec="$OUT/rnnencdec/metrics.jsonl" RNNsearch="$OUT/rnnsearch/metrics.jsonl"

cp "$OUT/figure2.png" "$FIGURES/figure2.png"
i=1
for png in "$OUT"/heatmaps/*.png; do cp "$png" "$FIGURES/attention-$i.png"; i=$((i + 1)); done
cp "$OUT/training.png" "$FIGURES/training.png"
cp "$OUT/figure2.json" "$FIGURES/figure2.json"
log "figures in $FIGURES: $(cd "$FIGURES" && ls | tr '\n' ' ')"
