#!/usr/bin/env bash
# Quality benchmark: Multi30k en->de, the default configuration trained for a wall-clock budget
# (30 minutes by default) on this machine, then test_2016_flickr translated with beam 5 and
# scored with sacreBLEU (13a, cased and -lc) and chrF against the raw references.
# Run it alone: other work on the 2 cores slows training several-fold.
#   make bench-quality            or   BUDGET=30 OUT=bench-out/multi30k bash benchmarks/multi30k.sh
# TRAIN_FLAGS adds options to `nmtkit train` (a lever's A/B: TRAIN_FLAGS="--set model.dropout=0.3"),
# VOCAB the SentencePiece vocabulary size (8000 by default), PREP_FLAGS adds options to
# `nmtkit preprocess` (PREP_FLAGS="--sampled-segmentations 8").
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/multi30k}
BUDGET=${BUDGET:-30}
mkdir -p "$OUT"
log() { echo "[multi30k] $*" >&2; }

log "data: $M30K; budget: $BUDGET min; output: $OUT"
nmtkit preprocess -s en -t de --trainpref "$M30K/train" --validpref "$M30K/val" \
  --testpref "$M30K/test_2016_flickr" --destdir "$OUT/data" --vocab-size "${VOCAB:-8000}" -q \
  ${PREP_FLAGS:-}
start=$(date +%s)
/usr/bin/time -f %M -o "$OUT/train.peak_kib" \
  nmtkit train "$OUT/data" --save-dir "$OUT/model" --time-budget "$BUDGET" --overwrite -q \
  ${TRAIN_FLAGS:-}
log "training command: $(( $(date +%s) - start )) s, peak RSS $(( $(cat "$OUT/train.peak_kib") / 1024 )) MiB"

gzip -dc "$M30K/test_2016_flickr.en.gz" > "$OUT/test.en"
gzip -dc "$M30K/test_2016_flickr.de.gz" > "$OUT/test.de"
start=$(date +%s.%N)
nmtkit translate -m "$OUT/model" --beam 5 -q < "$OUT/test.en" > "$OUT/test.beam5.de"
log "translate (beam 5, whole command): $(python3 -c 'import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))' "$start" "$(date +%s.%N)") s"

nmtkit score -r "$OUT/test.de" -i "$OUT/test.beam5.de" -M bleu -M chrf -q | tee "$OUT/scores.txt"
nmtkit score -r "$OUT/test.de" -i "$OUT/test.beam5.de" -M bleu --lowercase -q | sed 's/^BLEU/BLEU-lc/' \
  | tee -a "$OUT/scores.txt"
# The validation set translated the same way, beside the test set (tuning looks at it alone).
gzip -dc "$M30K/val.en.gz" > "$OUT/val.en"
gzip -dc "$M30K/val.de.gz" > "$OUT/val.de"
nmtkit translate -m "$OUT/model" --beam 5 -q < "$OUT/val.en" > "$OUT/val.beam5.de"
nmtkit score -r "$OUT/val.de" -i "$OUT/val.beam5.de" -M bleu -q | sed 's/^BLEU/BLEU-val/' \
  | tee -a "$OUT/scores.txt"
python3 - "$OUT/model/metrics.jsonl" <<'PY'
import json, statistics, sys
records = [json.loads(line) for line in open(sys.argv[1])]
train = [r for r in records if r["kind"] == "train"]
valid = [r for r in records if r["kind"] == "valid"]
steady = [r["tok_s"] for r in train[2:]] or [r["tok_s"] for r in train]  # after warm-up
print(f"updates\t{max((r['step'] for r in records), default=0)}")
if steady:
    print(f"train_tok_s_median\t{statistics.median(steady):.0f}")
dropouts = [r["dropout"] for r in train if r.get("dropout") is not None]
if dropouts:  # train.short_run_dropout: what the run's projected length set
    print(f"dropout\t{min(dropouts):.3f}-{max(dropouts):.3f} (mean {statistics.mean(dropouts):.3f})")
if valid:
    print(f"best_valid_bleu_greedy\t{max(r['val_bleu'] for r in valid):.2f}")
for r in records:
    if r["kind"] == "search":  # the length penalty chosen on validation when training ended
        print(f"length_penalty\t{r['length_penalty']}\t(tried {r['tried']}, {r['seconds']} s)")
PY
