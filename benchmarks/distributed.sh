#!/usr/bin/env bash
# Data-parallel training speed: the default RNNsearch on Multi30k en->de for a fixed number of
# updates under torchrun with 1 and with 2 processes, one thread each (gloo on the CPU). Prints,
# per process count, the target tokens per update and the median training throughput, the tok_s
# of the train records in metrics.jsonl (target tokens per second of all ranks together; the
# first record, warm-up, is left out). Run it alone (~7 minutes); outputs in bench-out/distributed.
#   make bench-distributed
#   UPDATES=20 PRESET=tiny bash benchmarks/distributed.sh     # a quick check that it works
#   PROCS="1 2 4" bash benchmarks/distributed.sh              # on a machine with more cores
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/distributed}
DATA=${DATA:-bench-out/data.en-de}
UPDATES=${UPDATES:-200}
PRESET=${PRESET:-default}
PROCS=${PROCS:-1 2}
mkdir -p "$OUT"
if [ ! -f "$DATA/manifest.json" ]; then
  echo "[distributed] preprocessing $M30K into $DATA" >&2
  nmtkit preprocess -s en -t de --trainpref "$M30K/train" --validpref "$M30K/val" \
    --destdir "$DATA" --vocab-size 8000 -q
fi
for n in $PROCS; do
  echo "[distributed] $n process(es), $UPDATES updates of --preset $PRESET" >&2
  torchrun --standalone --nproc-per-node "$n" -m nmtkit train "$DATA" -o "$OUT/procs-$n" \
    --preset "$PRESET" --max-updates "$UPDATES" --threads 1 --overwrite -q \
    --set train.log_every=10 --set train.validate_every=1000000000
done
python - "$OUT" $PROCS <<'EOF'
import json
import statistics
import sys
from pathlib import Path

out, procs = Path(sys.argv[1]), sys.argv[2:]
print("processes\tupdates\ttokens_per_update\ttrain_tok_s_median\tspeed-up")
base = None
for n in procs:
    lines = (out / f"procs-{n}" / "metrics.jsonl").read_text().splitlines()
    train = [r for r in map(json.loads, lines) if r["kind"] == "train"]
    steady = train[1:] or train
    rate = statistics.median(r["tok_s"] for r in steady)
    per_update = statistics.mean(r["tokens_per_update"] for r in steady)
    base = base or rate
    print(f"{n}\t{train[-1]['step']}\t{per_update:.0f}\t{rate:.0f}\t{rate / base:.2f}")
EOF
