"""Decode speed of the decoder-step levers, each turned on in turn, side by side in one run.

Each variant runs in a fresh process (one torch thread unless told), translates the first N
lines of a file twice after a warm-up batch, and reports the faster pass, so the variants are
measured alike. The variants:

- ``none``: the lever off (the search as before it);
- ``reorder``: the beam re-orders only the per-hypothesis state, not each sentence's
  annotations and attention keys (``DecoderState.reorder``).

Two more levers were measured with this script at commit aad5bba and not kept (docs/speed.md):
the products of one input (s_{i-1}, E y_{i-1}, c_i) stacked into one matrix product each, and
under bf16 the decoder's weights cast to bf16 once instead of by autocast.

Every variant must print the same digest of its translations (the levers change no output).

    python benchmarks/decode_levers.py -m demo/model --input demo/test.en --lines 1000 \\
        --precision bf16 --rounds 2
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time

VARIANTS = ("none", "reorder")


def run_variant(args: argparse.Namespace) -> None:
    """Measure one variant in this process and print one line."""
    import torch

    import nmtkit.registry as registry
    import nmtkit.translation.loading as translator

    if args.variant == "none":
        registry.DecoderState.reorder = registry.DecoderState.select  # type: ignore[method-assign]
    torch.set_num_threads(args.threads)
    model = translator.open_translator(args.model, precision=args.precision)
    with open(args.input, encoding="utf-8") as f:
        lines = f.read().splitlines()[: args.lines]
    list(model.translate(lines[:40]))  # warm-up: kernels for the first shapes
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        out = [f"{t.text}\t{t.candidates[0].score:.4f}" for t in model.translate(lines)]
        best = min(best, time.perf_counter() - start)
    digest = hashlib.md5("\n".join(out).encode()).hexdigest()[:10]
    print(
        f"| {args.variant} | {model.precision} | {len(lines) / best:.1f} | {best:.2f} | {digest} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("--input", required=True, help="raw source text, one sentence a line")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="passes over the variants")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        run_variant(args)
        return
    print("| levers on | precision | decode sent/s | seconds | output digest |")
    print("| --- | --- | ---: | ---: | --- |")
    for _ in range(args.rounds):
        for variant in VARIANTS:
            subprocess.run(
                [sys.executable, __file__, *sys.argv[1:], "--variant", variant], check=True
            )


if __name__ == "__main__":
    main()
