#!/usr/bin/env bash
# Alignment benchmark: alignment error rate on the 447 English-French Hansards pairs of the
# NAACL 2003 shared task (../shared/data/alignment), nmtkit's learned aligner against eflomal.
# Both learn from Multi30k train (Moses-tokenized) plus the 447 pairs, their text only: the gold
# links are read for scoring and nothing else.
#
# 1. eflomal, installed into its own venv, aligns the text lowercased and as it is; its forward
#    and reverse links are symmetrized with nmtkit's code.
# 2. `nmtkit align --learn` runs once per variant, one after another, each for at most BUDGET
#    minutes, and saves its aligner; the links of every method of METHODS are then read off the
#    saved aligner (`nmtkit align --aligner --method M`), without training again. Row names:
#    'learn NAME METHOD', e.g. 'learn default soft'.
# 3. With RNNSEARCH=1, the old attention rows: an en->fr and a fr->en RNNsearch model trained for
#    RNN_BUDGET minutes each, aligned by argmax, threshold and every bidirectional method.
# Every row goes to OUT/scores.tsv (system, P, R, AER in percent) as it is made; the seconds of
# each variant's `--learn` run (training, then its own links) to OUT/times.tsv.
#
# VARIANTS: entries separated by ';' (or newlines), each 'NAME' or 'NAME: FLAGS', where FLAGS are
# more `nmtkit align --learn` options, split at spaces (no quoting) and put after the common ones
# (so they may override --time-budget or --epochs). NAME is letters, digits, '.', '_' and '-'. A
# variant's --method is the method of the links its training run writes; --threshold and
# --keep-case are passed on to its re-extractions too. VARIANTS= (set but empty) learns none.
# The default list is the one below: the defaults, then each technique switched off alone, plain
# attention (the baseline), and the one option that is off by default switched on.
#
# Time: about a minute of text preparation, 2-3 minutes of eflomal (both casings), then per
# variant BUDGET minutes at most (less when EPOCHS epochs end sooner) plus about a minute of
# re-extraction: with the defaults (6 variants, BUDGET=30) 3 h 15 min at most; a variant's
# 5 epochs took 5 to 8 minutes on 2 cores, so expect under an hour. RNNSEARCH=1 adds
# 2 x RNN_BUDGET minutes and a few more. Run it alone: other work on the 2 cores slows training,
# and a budget-bound aligner then learns less.
#   bash benchmarks/alignment.sh
#   BUDGET=10 VARIANTS='default; no-agreement: --agreement 0' bash benchmarks/alignment.sh
# A smoke run of every step:
#   TRAIN_LINES=300 EPOCHS=1 BUDGET=0.2 VARIANTS=default RNNSEARCH=1 RNN_BUDGET=0.2 PRESET=tiny \
#     OUT=/tmp/alignment bash benchmarks/alignment.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/alignment}
BUDGET=${BUDGET:-30}            # minutes of training per learned aligner (both directions)
EPOCHS=${EPOCHS:-}              # --epochs of each learned aligner (empty: the CLI's default)
THREADS=${THREADS:-}            # torch threads of every nmtkit command (empty: torch's choice)
VARIANTS=${VARIANTS-"default; no-spelling: --no-spelling; no-agreement: --agreement 0;
  attention: --distortion attention --agreement 0 --no-spelling --method forward;
  char-ngrams: --char-ngrams; repeat-1: --repeat 1"}
METHODS=${METHODS:-soft forward reverse intersection grow-diag-final-and}  # scored per variant
EFLOMAL=${EFLOMAL:-1}           # 0 skips eflomal
RNNSEARCH=${RNNSEARCH:-0}       # 1 adds the RNNsearch attention rows (20+ minutes)
RNN_BUDGET=${RNN_BUDGET:-12}    # RNNsearch: training minutes per direction
PRESET=${PRESET:-default}       # RNNsearch: nmtkit train --preset
REPEAT=${REPEAT:-1}             # RNNsearch: copies of the 447 pairs in its training text
THRESHOLD=${THRESHOLD:-0.3}     # RNNsearch: for the --method threshold row
TRAIN_LINES=${TRAIN_LINES:-}    # use only the first N Multi30k training pairs (empty: all)
PYTHON=${PYTHON:-python3}       # the interpreter nmtkit is installed in (for Moses tokenization)
ALIGN_DATA=${ALIGN_DATA:-../shared/data/alignment}
GOLD="$ALIGN_DATA/enfr.gold"    # 1-indexed, English-French: `--gold-one-indexed`
mkdir -p "$OUT/text" "$OUT/links"
log() { echo "[alignment] $*" >&2; }

"$PYTHON" -c 'import nmtkit, sacremoses' 2>/dev/null \
  || { log "set PYTHON to the python that has nmtkit installed"; exit 2; }
command -v nmtkit > /dev/null || { log "put nmtkit on the PATH (e.g. .venv/bin)"; exit 2; }
threads=()
[ -z "$THREADS" ] || threads=(--threads "$THREADS")
log "data: $M30K and $ALIGN_DATA; budget: $BUDGET min per learned aligner; output: $OUT"

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

H="$OUT/text/hansards" L="$OUT/links"
printf 'system\tP\tR\tAER\n' > "$OUT/scores.tsv"
printf 'variant\tseconds\n' > "$OUT/times.tsv"
score() {  # score NAME FILE [--reverse]: one row of the table
  local scores
  scores=$(nmtkit align --evaluate "$2" --gold "$GOLD" --gold-one-indexed "${@:3}" -q)
  printf '%s\t%s\n' "$1" "$scores" >> "$OUT/scores.tsv"
}

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

# The learned aligner, one variant after another.
learn_common=(--source "$H.en" --target "$H.fr" --extra-source "$OUT/text/m30k.train.en"
  --extra-target "$OUT/text/m30k.train.fr" --time-budget "$BUDGET" "${threads[@]}")
[ -z "$EPOCHS" ] || learn_common+=(--epochs "$EPOCHS")
IFS=';' read -r -a variants <<< "${VARIANTS//$'\n'/;}"
for variant in "${variants[@]}"; do
  name=${variant%%:*} name=${name//[[:space:]]/} spec=
  [[ $variant != *:* ]] || spec=${variant#*:}
  if [ -z "$name" ] && [ -z "${spec//[[:space:]]/}" ]; then continue; fi  # an empty entry
  [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || { log "bad variant name in VARIANTS: '$variant'"; exit 2; }
  read -r -a flags <<< "$spec"
  # What the training run's links are, and what its re-extractions need to read the text alike.
  method=soft extract=()
  for ((k = 0; k < ${#flags[@]}; k++)); do
    case ${flags[k]} in
      --method) method=${flags[k + 1]:-} ;;
      --method=*) method=${flags[k]#*=} ;;
      --threshold) extract+=(--threshold "${flags[k + 1]:-}") ;;
      --threshold=* | --keep-case) extract+=("${flags[k]}") ;;
    esac
  done
  aligner="$OUT/aligner.$name.pt"
  log "learn $name: ${flags[*]:-(no extra flags)}"
  start=$(date +%s)
  nmtkit align --learn "${learn_common[@]}" "${flags[@]}" --save-aligner "$aligner" \
    --output "$L/learn.$name" -q
  seconds=$(( $(date +%s) - start ))
  log "learn $name: $seconds s"
  printf '%s\t%s\n' "$name" "$seconds" >> "$OUT/times.tsv"
  [[ " $METHODS " == *" $method "* ]] || score "learn $name $method" "$L/learn.$name"
  for m in $METHODS; do
    if [ "$m" = "$method" ]; then
      score "learn $name $m" "$L/learn.$name"
      continue
    fi
    nmtkit align --aligner "$aligner" --source "$H.en" --target "$H.fr" --method "$m" \
      "${extract[@]}" "${threads[@]}" --output "$L/learn.$name.$m" -q
    score "learn $name $m" "$L/learn.$name.$m"
  done
done

if [ "$RNNSEARCH" != 0 ]; then
  for lang in en fr; do
    cp "$OUT/text/m30k.train.$lang" "$OUT/text/train.$lang"
    for _ in $(seq "$REPEAT"); do cat "$OUT/text/hansards.$lang" >> "$OUT/text/train.$lang"; done
  done
  for pair in en-fr fr-en; do
    src=${pair%-*} tgt=${pair#*-}
    nmtkit preprocess -s "$src" -t "$tgt" --trainpref "$OUT/text/train" \
      --validpref "$OUT/text/m30k.valid" --destdir "$OUT/data.$pair" --no-normalize \
      --lowercase --vocab-size 8000 -q
    start=$(date +%s)
    nmtkit train "$OUT/data.$pair" --save-dir "$OUT/model.$pair" --preset "$PRESET" \
      --time-budget "$RNN_BUDGET" "${threads[@]}" --overwrite -q
    log "training RNNsearch $pair: $(( $(date +%s) - start )) s"
  done
  rnn=(--source "$H.en" --target "$H.fr" "${threads[@]}" -q)
  nmtkit align -m "$OUT/model.en-fr" "${rnn[@]}" --output "$L/rnnsearch.en-fr"
  score "rnnsearch en->fr argmax" "$L/rnnsearch.en-fr"
  nmtkit align -m "$OUT/model.fr-en" --source "$H.fr" --target "$H.en" "${threads[@]}" \
    --output "$L/rnnsearch.fr-en" -q
  score "rnnsearch fr->en argmax" "$L/rnnsearch.fr-en" --reverse
  nmtkit align -m "$OUT/model.en-fr" "${rnn[@]}" --method threshold --threshold "$THRESHOLD" \
    --output "$L/rnnsearch.threshold"
  score "rnnsearch en->fr threshold $THRESHOLD" "$L/rnnsearch.threshold"
  for method in intersection union grow-diag grow-diag-final grow-diag-final-and; do
    nmtkit align -m "$OUT/model.en-fr" --reverse-model "$OUT/model.fr-en" --method "$method" \
      "${rnn[@]}" --output "$L/rnnsearch.$method"
    score "rnnsearch $method" "$L/rnnsearch.$method"
  done
fi

log "scores in percent against $GOLD (lower AER is better):"
cat "$OUT/scores.tsv"
