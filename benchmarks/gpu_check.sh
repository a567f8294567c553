#!/usr/bin/env bash
# GPU check: what the docs claim about CUDA (training in bf16 and fp16, resume, translate, align,
# serve and score-pairs against the CPU, pinned batches, a missing device, speed), one line per
# check, exit status non-zero on any failure. Aimed at 6 minutes on one H200; not run on a GPU
# yet. docs/scale.md#gpu-check says what each check does, its tolerances and how to install a
# CUDA torch.
#   make gpu-check TORCH=torch                    # a fresh clone: a venv with PyPI's CUDA torch
#   bash benchmarks/gpu_check.sh --quick          # smaller sizes, aimed at 3 minutes
#   bash benchmarks/gpu_check.sh --device cpu --allow-skip   # dry run on the CPU (developers)
# Python: $NMTKIT_PYTHON, else .venv/bin/python, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${NMTKIT_PYTHON:-}
if [ -z "$python" ]; then
  if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi
exec "$python" benchmarks/gpu_check.py "$@"
