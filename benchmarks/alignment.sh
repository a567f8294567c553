#!/usr/bin/env bash
# Alignment benchmark: alignment error rate on the 447 English-French Hansards pairs of the
# NAACL 2003 shared task (../shared/data/alignment), attention against eflomal.
# Trains en->fr and fr->en models for BUDGET minutes each on Multi30k train plus the 447 pairs
# (their text only: the gold links are never used in training), aligns the 447 pairs with each
# method and scores every alignment with `nmtkit align --evaluate --gold`. Then installs eflomal
# into its own venv and aligns the same text, lowercased and as it is.
# Run it alone, about 35 minutes with the defaults: other work on the 2 cores slows training.
#   bash benchmarks/alignment.sh      or   BUDGET=12 OUT=bench-out/alignment bash benchmarks/alignment.sh
# A smoke run of every step:  BUDGET=0.2 PRESET=tiny TRAIN_LINES=2000 bash benchmarks/alignment.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/alignment}
BUDGET=${BUDGET:-12}            # training minutes per direction
PRESET=${PRESET:-default}       # nmtkit train --preset
TRAIN_LINES=${TRAIN_LINES:-}    # use only the first N Multi30k training pairs (empty: all)
REPEAT=${REPEAT:-1}             # copies of the 447 pairs in the training text
THRESHOLD=${THRESHOLD:-0.3}     # for the --method threshold row
EFLOMAL=${EFLOMAL:-1}           # 0 skips eflomal
PYTHON=${PYTHON:-python3}       # the interpreter nmtkit is installed in (for Moses tokenization)
ALIGN_DATA=${ALIGN_DATA:-../shared/data/alignment}
GOLD="$ALIGN_DATA/enfr.gold"    # 1-indexed, English-French: `--gold-one-indexed`
mkdir -p "$OUT/text" "$OUT/links"
log() { echo "[alignment] $*" >&2; }

"$PYTHON" -c 'import nmtkit, sacremoses' 2>/dev/null \
  || { log "set PYTHON to the python that has nmtkit installed"; exit 2; }
log "data: $M30K and $ALIGN_DATA; budget: $BUDGET min per direction; output: $OUT"

# The 447 pairs are tokenized already ('english ||| french'), and the gold counts their
# whitespace tokens: they go in as they are, so the models must not re-tokenize or normalize.
sed -e 's/ *|||.*$//' -e 's/^ *//' "$ALIGN_DATA/enfr.src-tgt" > "$OUT/text/hansards.en"
sed -e 's/^.*||| *//' -e 's/ *$//' "$ALIGN_DATA/enfr.src-tgt" > "$OUT/text/hansards.fr"

# Multi30k is raw text: Moses-tokenize it here (as the eflomal reference figure did).
"$PYTHON" - "$M30K" "$OUT/text" "${TRAIN_LINES:-0}" <<'PY'
import gzip, itertools, sys
from sacremoses import MosesTokenizer
m30k, out, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]) or None
for split, name, num_lines in (("train", "train", limit), ("val", "valid", None)):
    for lang in ("en", "fr"):
        tokenizer = MosesTokenizer(lang)
        with gzip.open(f"{m30k}/{split}.{lang}.gz", "rt", encoding="utf-8") as lines, \
                open(f"{out}/m30k.{name}.{lang}", "w", encoding="utf-8") as tokenized:
            for line in itertools.islice(lines, num_lines):
                tokenized.write(tokenizer.tokenize(line.strip(), escape=False, return_str=True))
                tokenized.write("\n")
PY
for lang in en fr; do
  cp "$OUT/text/m30k.train.$lang" "$OUT/text/train.$lang"
  for _ in $(seq "$REPEAT"); do cat "$OUT/text/hansards.$lang" >> "$OUT/text/train.$lang"; done
done

for pair in en-fr fr-en; do
  src=${pair%-*} tgt=${pair#*-}
  nmtkit preprocess -s "$src" -t "$tgt" --trainpref "$OUT/text/train" \
    --validpref "$OUT/text/m30k.valid" --destdir "$OUT/data.$pair" --no-normalize --lowercase \
    --vocab-size 8000 -q
  start=$(date +%s)
  nmtkit train "$OUT/data.$pair" --save-dir "$OUT/model.$pair" --preset "$PRESET" \
    --time-budget "$BUDGET" --overwrite -q
  log "training $pair: $(( $(date +%s) - start )) s"
done

H="$OUT/text/hansards" L="$OUT/links"
printf 'system\tP\tR\tAER\n' > "$OUT/scores.tsv"
score() {  # score NAME FILE [--reverse]: one row of the table
  printf '%s\t%s\n' "$1" "$(nmtkit align --evaluate "$2" --gold "$GOLD" --gold-one-indexed "${@:3}" -q)" \
    >> "$OUT/scores.tsv"
}
nmtkit align -m "$OUT/model.en-fr" --source "$H.en" --target "$H.fr" --output "$L/nmtkit.en-fr" -q
score "nmtkit en->fr argmax" "$L/nmtkit.en-fr"
nmtkit align -m "$OUT/model.fr-en" --source "$H.fr" --target "$H.en" --output "$L/nmtkit.fr-en" -q
score "nmtkit fr->en argmax" "$L/nmtkit.fr-en" --reverse
nmtkit align -m "$OUT/model.en-fr" --source "$H.en" --target "$H.fr" --method threshold \
  --threshold "$THRESHOLD" --output "$L/nmtkit.threshold" -q
score "nmtkit en->fr threshold $THRESHOLD" "$L/nmtkit.threshold"
for method in intersection union grow-diag grow-diag-final grow-diag-final-and; do
  nmtkit align -m "$OUT/model.en-fr" --reverse-model "$OUT/model.fr-en" --method "$method" \
    --source "$H.en" --target "$H.fr" --output "$L/nmtkit.$method" -q
  score "nmtkit $method" "$L/nmtkit.$method"
done

if [ "$EFLOMAL" != 0 ]; then
  if [ ! -x "$OUT/eflomal-venv/bin/eflomal-align" ]; then
    python3 -m venv "$OUT/eflomal-venv"
    "$OUT/eflomal-venv/bin/pip" install -q eflomal
  fi
  num_pairs=$(wc -l < "$H.en")
  for casing in lowercased as-is; do
    for lang in en fr; do
      cat "$OUT/text/m30k.train.$lang" "$H.$lang" > "$OUT/text/eflomal.$lang"
      if [ "$casing" = lowercased ]; then
        "$PYTHON" -c 'import sys; sys.stdout.write(sys.stdin.read().lower())' \
          < "$OUT/text/eflomal.$lang" > "$OUT/text/eflomal.$lang.tmp"
        mv "$OUT/text/eflomal.$lang.tmp" "$OUT/text/eflomal.$lang"
      fi
    done
    start=$(date +%s)
    "$OUT/eflomal-venv/bin/eflomal-align" -s "$OUT/text/eflomal.en" -t "$OUT/text/eflomal.fr" \
      -f "$L/eflomal.all.fwd" -r "$L/eflomal.all.rev" --overwrite
    log "eflomal ($casing): $(( $(date +%s) - start )) s"
    # Both directions' links come out source-target; the 447 pairs are the last lines.
    tail -n "$num_pairs" "$L/eflomal.all.fwd" > "$L/eflomal.$casing.en-fr"
    tail -n "$num_pairs" "$L/eflomal.all.rev" > "$L/eflomal.$casing.fr-en"
    score "eflomal $casing en->fr" "$L/eflomal.$casing.en-fr"
    score "eflomal $casing fr->en" "$L/eflomal.$casing.fr-en"
    for method in intersection grow-diag-final grow-diag-final-and; do
      "$PYTHON" -c 'import sys; from nmtkit.alignment.symmetrize import symmetrize_files as s
s(sys.argv[1], sys.argv[2], method=sys.argv[3], output=sys.argv[4])' \
        "$L/eflomal.$casing.en-fr" "$L/eflomal.$casing.fr-en" "$method" "$L/eflomal.$casing.$method"
      score "eflomal $casing $method" "$L/eflomal.$casing.$method"
    done
  done
fi

log "scores in percent against $GOLD (lower AER is better):"
cat "$OUT/scores.tsv"
