# Sourced by the demo and benchmarks: sets M30K to the raw Multi30k folder.
# $NMTKIT_DATA, else ../shared/data/multi30k, else `nmtkit download` (checksummed, cached).
if [ -n "${NMTKIT_DATA:-}" ]; then
  M30K="$NMTKIT_DATA"
elif [ -d ../shared/data/multi30k ]; then
  M30K="$(cd ../shared/data/multi30k && pwd)"
else
  M30K="$(nmtkit download)"
fi
export M30K
