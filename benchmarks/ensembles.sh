#!/usr/bin/env bash
# Checkpoint averaging and ensembles (issue 14): Multi30k en->de, the default model trained twice
# (seeds 1 and 2) for UPDATES updates each, validated every VALIDATE_EVERY updates and keeping
# the last 5 checkpoints (train.keep_last=5, early stopping off); then test_2016_flickr translated
# with beam 5 by seed 1's best and last checkpoints, seed 2's best, the average of seed 1's last
# 5 checkpoints (nmtkit average --last 5), and the ensemble of both seeds' best (translate -m A
# -m B): BLEU (sacreBLEU 13a) and the translate command's wall time, as a markdown table.
# Run it alone: other work on the 2 cores skews the times. UPDATES=1000 takes about 10 minutes
# of training per seed on 2 cores.
#   make bench-ensembles    or   UPDATES=1000 OUT=bench-out/ensembles bash benchmarks/ensembles.sh
# DATA_DIR: a data dir preprocessed from Multi30k en->de to reuse (default: made in $OUT/data);
# THREADS: torch threads of every command (default 2); RETRAIN=1 trains kept models again.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/ensembles}
UPDATES=${UPDATES:-1000}
VALIDATE_EVERY=${VALIDATE_EVERY:-$(( UPDATES >= 10 ? UPDATES / 10 : 1 ))}
THREADS=${THREADS:-2}
KEEP=5
mkdir -p "$OUT"
log() { echo "[ensembles] $*" >&2; }

DATA=${DATA_DIR:-$OUT/data}
log "data: $DATA; $UPDATES updates per seed, validation every $VALIDATE_EVERY; output: $OUT"
if [ ! -f "$DATA/manifest.json" ]; then
  [ -z "${DATA_DIR:-}" ] || { log "DATA_DIR=$DATA_DIR is not a data dir"; exit 1; }
  nmtkit preprocess -s en -t de --trainpref "$M30K/train" --validpref "$M30K/val" \
    --testpref "$M30K/test_2016_flickr" --destdir "$DATA" --vocab-size 8000 -q
fi
gzip -dc "$M30K/test_2016_flickr.en.gz" > "$OUT/test.en"
gzip -dc "$M30K/test_2016_flickr.de.gz" > "$OUT/test.de"

for seed in 1 2; do
  model="$OUT/seed$seed"
  kept=0
  [ ! -d "$model" ] || kept=$(find "$model" -maxdepth 1 -name 'checkpoint_*.pt' | wc -l)
  if [ -f "$model/best.pt" ] && [ "$kept" -ge "$KEEP" ] && [ -z "${RETRAIN:-}" ]; then
    log "seed $seed: kept (RETRAIN=1 trains it again)"; continue
  fi
  log "training seed $seed"
  nmtkit train "$DATA" --save-dir "$model" --seed "$seed" --max-updates "$UPDATES" \
    --threads "$THREADS" --overwrite -q --set train.keep_last="$KEEP" \
    --set train.validate_every="$VALIDATE_EVERY" --set train.patience=0
done
nmtkit average "$OUT/seed1" --last "$KEEP" -o "$OUT/seed1-avg$KEEP" --overwrite -q

seconds() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.1f}")' "$@"; }
table="$OUT/table.md"
{
  echo "| system | models | test_2016_flickr BLEU | translate s |"
  echo "| --- | --- | --- | --- |"
} > "$table"
run_system() {  # name description -m MODEL...
  local name=$1 description=$2; shift 2
  local start end bleu
  start=$(date +%s.%N)
  nmtkit translate "$@" --beam 5 --threads "$THREADS" -q < "$OUT/test.en" > "$OUT/$name.de"
  end=$(date +%s.%N)
  bleu=$(nmtkit score -r "$OUT/test.de" -i "$OUT/$name.de" -M bleu -q | cut -f2)
  printf '| %s | %s | %.2f | %s |\n' "$name" "$description" "$bleu" "$(seconds "$start" "$end")" \
    >> "$table"
  log "$name: BLEU $bleu"
}
run_system best "seed 1, best.pt" -m "$OUT/seed1"
run_system last "seed 1, last.pt" -m "$OUT/seed1/last.pt"
run_system best-seed2 "seed 2, best.pt" -m "$OUT/seed2"
run_system "avg$KEEP" "seed 1, mean of its last $KEEP checkpoints" -m "$OUT/seed1-avg$KEEP"
run_system ensemble "seeds 1 and 2, best.pt each" -m "$OUT/seed1" -m "$OUT/seed2"

python3 - "$OUT" <<'PY' >> "$table"
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print()
for seed in (1, 2):
    records = [json.loads(line) for line in (out / f"seed{seed}" / "metrics.jsonl").open()]
    train = [r for r in records if r["kind"] == "train"]
    valid = [r for r in records if r["kind"] == "valid"]
    best = max(valid, key=lambda r: r["val_bleu"])
    minutes = f"{train[-1]['seconds'] / 60:.1f} min" if train else "? min (no log line yet)"
    print(f"seed {seed}: {max(r['step'] for r in records)} updates, {minutes} of training "
          f"with validation; best valid BLEU {best['val_bleu']:.2f} at update {best['step']}  ")
PY
kept=$(cd "$OUT/seed1" && ls checkpoint_*.pt | sort -t_ -k2 -n | tr '\n' ' ')
echo "avg$KEEP averages seed 1's ${kept% }." >> "$table"
cat "$table"
log "table: $table"
