"""Does a compiled decoder step pay, one sentence at a time? (docs/speed.md, the ninth round)

Loads a model as ``serve`` does, optionally replaces its decoder's ``step`` by
``torch.compile(step, dynamic=True)`` (``--compile``; ``--freeze`` adds Inductor's weight
freezing, which prepacks the weights for oneDNN), translates 10 sentences of ``--words`` words to
warm up (and compile), then 50 more one at a time, and prints the p50 / p90 milliseconds a
sentence, the decoder step's share of that time and its milliseconds a step, and a digest of the
translations. Run each variant in its own process, one after the other, nothing else running:

    python benchmarks/compiled_step.py -m bench-out/avx2-q15/model \\
        --input bench-out/avx2-q15/test.en
    python benchmarks/compiled_step.py -m ... --input ... --compile --freeze --precision fp32
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-m", "--model", type=Path, required=True)
    parser.add_argument("--input", type=Path, required=True, help="raw source text, a line each")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--beam", type=int, default=5, help="1: greedy")
    parser.add_argument("--words", type=int, default=10)
    parser.add_argument("--compile", action="store_true", help="torch.compile the decoder step")
    parser.add_argument("--freeze", action="store_true", help="with --compile: Inductor freezing")
    args = parser.parse_args()

    import torch

    from nmtkit.search.overrides import SearchOverrides
    from nmtkit.translation.loading import open_translator

    lines = args.input.read_text(encoding="utf-8").splitlines()
    chosen = [line for line in lines if len(line.split()) == args.words][:60]
    search = SearchOverrides(greedy=True) if args.beam == 1 else SearchOverrides(beam=args.beam)
    translator = open_translator(args.model, search=search, precision=args.precision)
    model = translator.model
    if args.compile:
        if args.freeze:
            import torch._inductor.config as inductor

            inductor.freezing = True
        decoder = model.decoder  # type: ignore[union-attr]
        decoder.step = torch.compile(decoder.step, dynamic=True)

    spent = {"seconds": 0.0, "steps": 0}
    plain_step = model.decode_step

    def timed_step(*positional: Any, **named: Any) -> Any:
        start = time.perf_counter()
        out = plain_step(*positional, **named)
        spent["seconds"] += time.perf_counter() - start
        spent["steps"] += 1
        return out

    model.decode_step = timed_step  # type: ignore[method-assign]
    start = time.perf_counter()
    for line in chosen[:10]:
        translator.translate_chunk([line])
    warm = time.perf_counter() - start
    spent.update(seconds=0.0, steps=0)
    times, outputs = [], []
    for line in chosen[10:]:
        start = time.perf_counter()
        outputs.append(translator.translate_chunk([line]))
        times.append(1000 * (time.perf_counter() - start))
    times.sort()
    total = sum(times) / 1000
    variant = ("compile+freeze" if args.freeze else "compile") if args.compile else "eager"
    digest = hashlib.md5(repr(outputs).encode()).hexdigest()[:12]
    print(
        f"{variant} {translator.precision} beam {args.beam}: warm-up {warm:.1f} s; "
        f"p50 {statistics.median(times):.1f} ms, p90 {times[int(0.9 * len(times))]:.1f} ms; "
        f"step {spent['seconds']:.2f} of {total:.2f} s ({100 * spent['seconds'] / total:.0f} %), "
        f"{1000 * spent['seconds'] / max(1, spent['steps']):.2f} ms a step; output {digest}"
    )


if __name__ == "__main__":
    main()
