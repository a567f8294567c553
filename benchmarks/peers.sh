#!/usr/bin/env bash
# nmtkit against fairseq, Marian (C++, the pymarian wheel), OpenNMT-py and Joey NMT, side by side
# in one run (make bench-peers).
# First nmtkit's own speed benchmark with the same training budget, then each peer's script
# from ../shared/peers, one at a time (each builds its venv first, unmeasured), then the table
# of ratios nmtkit/peer in bench-out/peers/peers.json. Run it alone: about 12 minutes per peer
# with the defaults, plus the venv builds of a first run.
#   make bench-peers
#   PEERS="fairseq marian" PEER_BUDGET=360 TP_TO=400 bash benchmarks/peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/data.sh
OUT=${OUT:-bench-out/peers}
PEERS_DIR=${PEERS_DIR:-../shared/peers}
PEERS=${PEERS:-fairseq marian onmt joey}
PEER_BUDGET=${PEER_BUDGET:-360}   # seconds of training per tool (the peers' README used 900)
export TP_TO=${TP_TO:-400}         # throughput windows from update 100 to this one
mkdir -p "$OUT"
log() { echo "[peers] $*" >&2; }

for peer in $PEERS; do
  [ -x "$PEERS_DIR/run_$peer.sh" ] || { log "no $PEERS_DIR/run_$peer.sh"; exit 2; }
  log "setting up $peer (not measured)"
  SETUP_ONLY=1 "$PEERS_DIR/run_$peer.sh" "$M30K" "$PEER_BUDGET" >&2
done

log "nmtkit: $PEER_BUDGET s of training, then translation"
minutes=$(python -c "print($PEER_BUDGET / 60)")
OUT="$OUT/nmtkit" bash benchmarks/speed.sh --minutes "$minutes" --parts roofline,train,translate

for peer in $PEERS; do
  log "measuring $peer"
  "$PEERS_DIR/run_$peer.sh" "$M30K" "$PEER_BUDGET" | tee "$OUT/$peer.txt"
done

python benchmarks/peers_table.py --nmtkit "$OUT/nmtkit/speed.json" --out "$OUT/peers.json" \
  $(for peer in $PEERS; do echo "$OUT/$peer.txt"; done)
