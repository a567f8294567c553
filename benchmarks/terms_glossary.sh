#!/usr/bin/env bash
# The terminology benchmark's glossary, built from test_2016_flickr en->de (source and
# reference only, never a translation): see benchmarks/terms_glossary.py for the recipe.
#   MODEL=DIR bash benchmarks/terms_glossary.sh OUT_DIR
# Writes OUT_DIR/glossary.tsv, OUT_DIR/terms.txt (a --constraints / --terms file, one line per
# test line), OUT_DIR/stats.json, and keeps its inputs: OUT_DIR/text/*.tok.* (13a tokens) and
# OUT_DIR/test.align (the links). An OUT_DIR/test.align already there is used as it is (delete
# it to align again); the glossary is rebuilt every time (seconds).
#
# MODEL: the model whose source pipeline decides where a source term matches (its normalization
# and subwords). The alignment: `nmtkit align --learn` on the 13a-tokenized test pairs plus
# Multi30k train, ALIGN_MEMBERS pairs of ALIGN_EPOCHS epochs, seed 1, THREADS torch threads,
# and no time budget, so that it is the same on every run on the same machine (the thread count
# changes the order of floating-point sums): 4 min on 2 idle cores, 18 min beside other work.
# ALIGN_BUDGET=MIN caps it at MIN minutes instead, which makes the links depend on the machine's
# speed (the budget also shapes the learning-rate decay).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: MODEL=DIR bash $0 OUT_DIR" >&2; exit 2; }
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
MODEL=${MODEL:?set MODEL to the model directory}
MODEL=$(cd "$MODEL" && pwd)
cd "$(dirname "$0")/.."
source benchmarks/data.sh
PYTHON=${PYTHON:-python3}          # the interpreter nmtkit is installed in
THREADS=${THREADS:-2}
ALIGN_MEMBERS=${ALIGN_MEMBERS:-2}
ALIGN_EPOCHS=${ALIGN_EPOCHS:-2}
ALIGN_BUDGET=${ALIGN_BUDGET:-}
log() { echo "[terms_glossary] $*" >&2; }
command -v nmtkit > /dev/null || { log "put nmtkit on the PATH (e.g. .venv/bin)"; exit 2; }

terms_glossary() {
  local text="$OUT/text" glossary=(env "$PYTHON" benchmarks/terms_glossary.py)
  mkdir -p "$text"
  gzip -dc "$M30K/test_2016_flickr.en.gz" > "$text/test.en"
  gzip -dc "$M30K/test_2016_flickr.de.gz" > "$text/test.de"
  if [ ! -s "$OUT/test.align" ]; then
    local split lang budget=()
    [ -z "$ALIGN_BUDGET" ] || budget=(--time-budget "$ALIGN_BUDGET")
    for split in train test_2016_flickr; do
      for lang in en de; do
        "${glossary[@]}" tokenize "$M30K/$split.$lang.gz" "$text/${split%_2016_flickr}.tok.$lang"
      done
    done
    log "aligning the test set ($ALIGN_MEMBERS pairs x $ALIGN_EPOCHS epochs, $THREADS threads)"
    nmtkit align --learn --source "$text/test.tok.en" --target "$text/test.tok.de" \
      --extra-source "$text/train.tok.en" --extra-target "$text/train.tok.de" \
      --members "$ALIGN_MEMBERS" --epochs "$ALIGN_EPOCHS" --seed 1 --threads "$THREADS" \
      "${budget[@]}" --output "$OUT/test.align.part"
    mv "$OUT/test.align.part" "$OUT/test.align"
  else
    log "using the links in $OUT/test.align"
  fi
  "${glossary[@]}" build --model "$MODEL" --source "$text/test.en" --reference "$text/test.de" \
    --alignment "$OUT/test.align" --train-source "$M30K/train.en.gz" \
    --train-target "$M30K/train.de.gz" --out "$OUT"
}

terms_glossary
