#!/usr/bin/env bash
# Serving benchmark (issue 14): `nmtkit serve` with 1, 8 and 32 concurrent clients, one sentence
# a request, over test_2016_flickr (English source), beside `nmtkit translate` on the same file:
# sentences/s, p50/p95 latency, mean batch and peak server RSS. The clients run on this machine
# too. Writes bench-out/serve/serve.md (the table of docs/serving.md) and serve.json. Run it
# alone (~5 minutes with a bench-quality model).
#   make bench-serve      or   MODEL=bench-out/multi30k/model bash benchmarks/serve.sh
#   bash benchmarks/serve.sh --clients 1,8 --sentences 200 --threads 2   # any serve.py option
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/serve}
MODEL=${MODEL:-bench-out/multi30k/model}  # an en->de model: make bench-quality trains one
if [ ! -f "$MODEL/best.pt" ]; then
  echo "[serve] no model in $MODEL: run make bench-quality first, or set MODEL=dir" >&2
  exit 1
fi
python benchmarks/serve.py --model "$MODEL" --test "$M30K/test_2016_flickr.en.gz" \
  --out "$OUT" "$@"
