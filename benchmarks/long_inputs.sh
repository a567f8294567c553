#!/usr/bin/env bash
# Long inputs (issue: keep quality on paragraphs): test_2016_flickr en->de as single sentences
# and as lines of 2, 3 and 4 consecutive sentences joined, translated by each model variant
# with each decoding lever, without sentence splitting and with --split-sentences; BLEU of each
# as a % of single sentences, and BLEU by source length up to 60+ words.
# Models train for UPDATES updates each (quality depends only on the updates, so JOBS models
# may train side by side with one thread each; never report their speed).
#   make bench-long      or   UPDATES=1500 JOBS=2 OUT=bench-out/long bash benchmarks/long_inputs.sh
# VARIANTS: "name:override,override ..." per model; DECODINGS: "name:translate flags ...".
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/long}
UPDATES=${UPDATES:-1500}
JOBS=${JOBS:-2}
VARIANTS=${VARIANTS:-"base:train.concat_rate=0 concat:train.concat_rate=0.5"}
DECODINGS=${DECODINGS:-"beam5: lp0:--length-penalty=0 lp2:--length-penalty=2 cov0.2:--coverage-penalty=0.2"}
mkdir -p "$OUT"
log() { echo "[long] $*" >&2; }

log "data: $M30K; $UPDATES updates per model; output: $OUT"
[ -f "$OUT/data/manifest.json" ] || nmtkit preprocess -s en -t de --trainpref "$M30K/train" \
  --validpref "$M30K/val" --testpref "$M30K/test_2016_flickr" --destdir "$OUT/data" \
  --vocab-size 8000 -q
gzip -dc "$M30K/test_2016_flickr.en.gz" > "$OUT/test.en"
gzip -dc "$M30K/test_2016_flickr.de.gz" > "$OUT/test.de"
for k in 1 2 3 4; do
  python benchmarks/long_inputs.py join "$k" "$OUT/test.en" "$OUT/test.de" "$OUT/src.x$k" "$OUT/ref.x$k"
done
cat "$OUT"/src.x{1,2,3,4} > "$OUT/src.mixed"
cat "$OUT"/ref.x{1,2,3,4} > "$OUT/ref.mixed"

train_one() {  # name overrides...
  local name=$1; shift
  local sets=()
  for o in "$@"; do sets+=(--set "$o"); done
  if [ -f "$OUT/models/$name/best.pt" ] && [ -z "${RETRAIN:-}" ]; then
    log "model $name: kept (RETRAIN=1 trains it again)"; return
  fi
  log "training $name (${*:-default})"
  nmtkit train "$OUT/data" --save-dir "$OUT/models/$name" --max-updates "$UPDATES" \
    --threads 1 --overwrite -q "${sets[@]}"
}
running=0
for variant in $VARIANTS; do
  name=${variant%%:*} overrides=${variant#*:}
  train_one "$name" ${overrides//,/ } &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait

translate_one() {  # model output flags...: kept when newer than the model's best.pt
  local model=$1 output=$2 input=$3; shift 3
  if [ "$output" -nt "$OUT/models/$model/best.pt" ]; then return; fi
  nmtkit translate -m "$OUT/models/$model" -q "$@" < "$input" > "$output.tmp"
  mv "$output.tmp" "$output"
}
for variant in $VARIANTS; do
  name=${variant%%:*}
  for decoding in $DECODINGS split:--split-sentences; do
    dname=${decoding%%:*} flags=${decoding#*:}
    mkdir -p "$OUT/$name/$dname"
    sets="1 2 3"  # x4 only feeds the by-length table, which the default decoding and split make
    if [ "$dname" = beam5 ] || [ "$dname" = split ]; then sets="1 2 3 4"; fi
    for k in $sets; do
      # shellcheck disable=SC2086
      translate_one "$name" "$OUT/$name/$dname/x$k.de" "$OUT/src.x$k" $flags
    done
  done
  cat "$OUT/$name/beam5"/x{1,2,3,4}.de > "$OUT/$name/mixed.beam5.de"
  cat "$OUT/$name/split"/x{1,2,3,4}.de > "$OUT/$name/mixed.split.de"
  log "model $name translated"
done

python benchmarks/long_inputs.py table "$OUT" | tee "$OUT/table.md"
systems=() names=()
for variant in $VARIANTS; do
  name=${variant%%:*}
  systems+=("$OUT/$name/mixed.beam5.de" "$OUT/$name/mixed.split.de")
  names+=(--name "$name" --name "$name+split")
done
nmtkit score -r "$OUT/ref.mixed" "${systems[@]}" "${names[@]}" -M bleu --by-length \
  --source "$OUT/src.mixed" --buckets 0,10,20,30,40,50,60 --plot "$OUT/by_length.png" \
  2>&1 | tee "$OUT/by_length.txt"
log "tables: $OUT/table.md, $OUT/by_length.txt; plot: $OUT/by_length.png"
