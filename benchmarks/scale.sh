#!/usr/bin/env bash
# Scale benchmark (issue: corpora of WMT size). Builds synthetic corpora from Multi30k's 29k
# training pairs, repeated and shuffled the same way on both sides (seeded), then measures wall
# time and peak memory of: preprocess of SIZES pairs with --workers 2 and the same
# --subword-sample SUBWORD_SAMPLE at every size (part `preprocess`; PREPROCESS_FLAGS adds
# options); training start-up, one update of the tiny preset on the data dirs of TRAIN_SIZES
# pairs (`train`); a greedy translation stream of TRANSLATE_LINES short lines with a model
# trained on the largest of them (`translate`). Peak memory is the largest resident set of one
# process (GNU time's %M, which covers the worker processes one by one). Appends to
# bench-out/scale/results.tsv and prints a markdown table. Run it alone (about 1.5 hours; the
# 30M-pair corpus takes 3.6 GB of disk, its data dir 2.2 GB).
#   make bench-scale
#   SIZES=20000 TRAIN_SIZES=20000 TRANSLATE_LINES="2000 20000" bash benchmarks/scale.sh  # quick
#   PARTS=preprocess SIZES="300000 3000000 30000000" bash benchmarks/scale.sh   # one part again
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/scale}
SIZES=${SIZES:-"300000 3000000 30000000"}
TRAIN_SIZES=${TRAIN_SIZES:-"300000 3000000"}
PARTS=${PARTS:-"preprocess train translate"}
WORKERS=${WORKERS:-2}
SUBWORD_SAMPLE=${SUBWORD_SAMPLE:-300000}
PREPROCESS_FLAGS=${PREPROCESS_FLAGS:-}
TRANSLATE_LINES=${TRANSLATE_LINES:-"100000 1000000"}
SEED=${SEED:-1}
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
[ -f "$RESULTS" ] || printf 'part\tsize\tseconds\tpeak_mib\tnote\n' >"$RESULTS"

# measure NAME CMD...: run CMD (stdin and stdout passed through), record "seconds peak_KiB".
measure() {
  local name=$1
  shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$OUT/$name.time" "$@"
  else  # getrusage's children maximum, the same figure as GNU time's %M
    python -c '
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[2:])
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(sys.argv[1], "w").write(f"{time.perf_counter() - start:.2f} {peak}\n")
sys.exit(code)' "$OUT/$name.time" "$@"
  fi
}

# record PART SIZE NAME NOTE: append the measurement NAME to the results.
record() {
  read -r seconds peak <"$OUT/$3.time"
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$seconds" "$((peak / 1024))" "$4" >>"$RESULTS"
  echo "[scale] $1 $2: ${seconds} s, $((peak / 1024)) MiB" >&2
}

# corpus SIZE: write $OUT/corpus-SIZE/train.{en,de}, SIZE pairs (plain text).
corpus() {
  local dir="$OUT/corpus-$1"
  [ -f "$dir/train.de" ] && return
  mkdir -p "$dir"
  python - "$M30K" "$dir" "$1" "$SEED" <<'EOF'
import gzip, sys
import numpy as np
m30k, folder, size, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sides = {}
for lang in ("en", "de"):
    with gzip.open(f"{m30k}/train.{lang}.gz", "rt", encoding="utf-8", newline="\n") as stream:
        sides[lang] = stream.read().splitlines()
base = len(sides["en"])
repeats = -(-size // base)
order = np.random.default_rng(seed).permutation(repeats * base)[:size] % base
for lang, lines in sides.items():
    with open(f"{folder}/train.{lang}.tmp", "w", encoding="utf-8", newline="\n") as out:
        for start in range(0, size, 100_000):
            out.write("".join(lines[i] + "\n" for i in order[start : start + 100_000]))
EOF
  for lang in en de; do mv "$dir/train.$lang.tmp" "$dir/train.$lang"; done
}

# data SIZE: preprocess corpus SIZE into $OUT/data-SIZE, measured as "preprocess-SIZE".
data() {
  corpus "$1"
  # No validation split: train would validate when it stops, which is no part of its start-up.
  # shellcheck disable=SC2086  # PREPROCESS_FLAGS: words
  measure "preprocess-$1" nmtkit preprocess -s en -t de --trainpref "$OUT/corpus-$1/train" \
    --destdir "$OUT/data-$1" --vocab-size 8000 --workers "$WORKERS" --seed "$SEED" \
    --subword-sample "$SUBWORD_SAMPLE" $PREPROCESS_FLAGS -q
}

if [[ " $PARTS " == *" preprocess "* ]]; then
  for size in $SIZES; do
    data "$size"
    record preprocess "$size" "preprocess-$size" \
      "--workers $WORKERS --subword-sample $SUBWORD_SAMPLE${PREPROCESS_FLAGS:+ $PREPROCESS_FLAGS}"
  done
fi

largest=${TRAIN_SIZES##* }
for size in $TRAIN_SIZES; do
  if [[ " $PARTS " == *" train "* ]]; then
    [ -f "$OUT/data-$size/manifest.json" ] || data "$size"
    measure "train-$size" nmtkit train "$OUT/data-$size" -o "$OUT/model-start-$size" \
      --preset tiny --max-updates 1 --overwrite -q
    record train "$size" "train-$size" "start-up and 1 update, tiny preset"
  fi
done

if [[ " $PARTS " == *" translate "* ]]; then
  [ -f "$OUT/data-$largest/manifest.json" ] || data "$largest"
  model="$OUT/model-translate"
  if [ ! -f "$model/best.pt" ]; then
    echo "[scale] training a tiny model for the translation stream" >&2
    nmtkit train "$OUT/data-$largest" -o "$model" --preset tiny --max-updates 200 \
      --overwrite -q
  fi
  for lines in $TRANSLATE_LINES; do
    # Short lines: the first five words of Multi30k's validation sentences, cycled.
    python - "$M30K/val.en.gz" "$lines" >"$OUT/stream-$lines.en" <<'EOF'
import gzip, itertools, sys
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as stream:
    short = [" ".join(line.split()[:5]) + "\n" for line in stream]
lines = itertools.islice(itertools.cycle(short), int(sys.argv[2]))
sys.stdout.writelines(lines)
EOF
    measure "translate-$lines" nmtkit translate -m "$model" --greedy -q \
      <"$OUT/stream-$lines.en" >"$OUT/stream-$lines.de"
    test "$(wc -l <"$OUT/stream-$lines.de")" -eq "$lines"
    rm "$OUT/stream-$lines.en"
    record translate "$lines" "translate-$lines" "greedy, lines of 5 words"
  done
fi

# The table: the latest row of each (part, size).
awk -F'\t' 'NR > 1 { key = $1 FS $2; if (!(key in row)) order[++n] = key; row[key] = $0 }
  END {
    print "| part | pairs or lines | wall time (s) | peak memory (MiB) | note |"
    print "| --- | ---: | ---: | ---: | --- |"
    for (i = 1; i <= n; i++) { split(row[order[i]], f, FS)
      printf "| %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[4], f[5] }
  }' "$RESULTS"
