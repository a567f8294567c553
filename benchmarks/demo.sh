#!/usr/bin/env bash
# The main job end to end on Multi30k English->German, in under 10 minutes on 2 cores:
# preprocess, train the `demo` preset (the default RNNsearch for a fixed number of updates, with
# a progress bar and its ETA), translate the test set with beam 5, score it, show five
# translations beside their references, draw an attention heatmap, and print what it reached
# on this machine's CPU class.
#   make demo
#   DEMO_UPDATES=800 make demo          # more updates, a better model, a longer wait
#   bash benchmarks/demo.sh --set train.precision=fp32   # arguments go to `nmtkit train`
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${DEMO_DIR:-demo}
UPDATES=${DEMO_UPDATES:-}             # empty: the preset's train.max_updates
SAFETY_MINUTES=${DEMO_MINUTES:-7}     # a slow or busy machine stops training here, and says so
mkdir -p "$OUT"
started=$(date +%s)
cpu=$(python -c "from nmtkit.runtime import describe_device; print(describe_device())")
echo "== machine: $cpu, $(nproc) cores"

echo "== data: $M30K"
nmtkit preprocess -s en -t de --trainpref "$M30K/train" --validpref "$M30K/val" \
  --testpref "$M30K/test_2016_flickr" --destdir "$OUT/data" --vocab-size 8000

echo "== train: the demo preset (default RNNsearch, ${UPDATES:-its} updates)"
budget=(--time-budget "$SAFETY_MINUTES")
[ -n "$UPDATES" ] && budget+=(--max-updates "$UPDATES")
nmtkit train "$OUT/data" --save-dir "$OUT/model" --preset demo --overwrite "${budget[@]}" "$@"
trained=$(date +%s)

echo "== translate test_2016_flickr (beam 5)"
gzip -dc "$M30K/test_2016_flickr.en.gz" > "$OUT/test.en"
gzip -dc "$M30K/test_2016_flickr.de.gz" > "$OUT/test.de"
nmtkit translate -m "$OUT/model" < "$OUT/test.en" > "$OUT/test.hyp.de"

echo "== score"
nmtkit score -r "$OUT/test.de" -i "$OUT/test.hyp.de" | tee "$OUT/score.txt"

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

finished=$(date +%s)
python - "$OUT" "$cpu" "$started" "$trained" "$finished" <<'PY'
import json, sys
import yaml
out, cpu, started, trained, finished = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
records = [json.loads(line) for line in open(f"{out}/model/metrics.jsonl", encoding="utf-8")]
updates = max(r.get("step", 0) for r in records)
target = yaml.safe_load(open(f"{out}/model/config.yaml", encoding="utf-8"))["train"]["max_updates"]
bleu = open(f"{out}/score.txt", encoding="utf-8").read().split("BLEU", 1)[-1].split()[0:2]
print(
    f"== demo done on {cpu}: {updates} updates in {(trained - started) / 60:.1f} min "
    f"(preprocess and training), test BLEU {' '.join(bleu)}, "
    f"{(finished - started) / 60:.1f} min in all"
)
if target and updates < target:
    print(f"   training stopped at its time budget after {updates} of {target} updates: this "
          "machine is slower or busier than the demo was sized for, and the model is weaker")
PY
