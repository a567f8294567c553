"""AER of `nmtkit align --learn` on the 447 Hansards pairs, one technique setting per run.

Learns an aligner pair on Multi30k train (Moses-tokenized, as benchmarks/alignment.sh writes it)
plus the 447 pairs, then scores every extraction method against the gold. With --each-epoch it
scores after every epoch too. The gold is only read for scoring, never for training or choices.

    python benchmarks/align_learn.py --text bench-out/alignment/text --epochs 5
    python benchmarks/align_learn.py --text ... --agreement 0          # one technique off
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from nmtkit.alignment.gold import GoldFile, alignment_error_rate
from nmtkit.alignment.neural import extract
from nmtkit.alignment.neural.aligners import AlignerPair
from nmtkit.alignment.neural.learned_alignment import read_tokenized_pairs
from nmtkit.alignment.neural.learner import LearnConfig, learn
from nmtkit.alignment.neural.model import AlignerConfig
from nmtkit.runtime import describe_device


def score(aligners: AlignerPair, pairs, gold, methods, thresholds) -> dict[str, list[float]]:
    posteriors = aligners.posteriors(pairs)
    rows = {}
    for method in methods:
        for threshold in thresholds if method == "soft" else [extract.DEFAULT_THRESHOLD]:
            links = [extract.links(f, r, method=method, threshold=threshold) for f, r in posteriors]
            s = alignment_error_rate(links, gold)
            name = f"soft {threshold}" if method == "soft" else method
            rows[name] = [
                round(100 * s.precision, 2),
                round(100 * s.recall, 2),
                round(100 * s.aer, 2),
            ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=Path("bench-out/alignment/text"))
    parser.add_argument("--gold", type=Path, default=Path("../shared/data/alignment/enfr.gold"))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--time-budget", type=float, default=None)
    parser.add_argument("--distortion", default="hmm")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--char-ngrams", action="store_true")
    parser.add_argument("--spelling", action="store_true")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--agreement", type=float, default=1.0)
    parser.add_argument("--agreement-from", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--max-tokens", type=int, default=2000)
    parser.add_argument("--no-extra", action="store_true", help="learn from the 447 pairs alone")
    parser.add_argument("--each-epoch", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="append the result here")
    parser.add_argument("--tag", default="")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pairs = read_tokenized_pairs(
        args.text / "hansards.en", args.text / "hansards.fr", lowercase=True
    )
    extra = (
        []
        if args.no_extra
        else read_tokenized_pairs(
            args.text / "m30k.train.en", args.text / "m30k.train.fr", lowercase=True
        )
    )
    gold = GoldFile(path=args.gold, one_indexed=True).read()
    methods = ["soft", "forward", "reverse", "intersection", "grow-diag-final-and"]
    thresholds = [0.3, 0.4, 0.5, 0.6, 0.7]
    config = LearnConfig(
        aligner=AlignerConfig(
            dim=args.dim,
            distortion=args.distortion,
            char_ngrams=args.char_ngrams,
            spelling=args.spelling,
        ),
        epochs=args.epochs,
        time_budget=args.time_budget,
        max_tokens=args.max_tokens,
        lr=args.lr,
        repeat=args.repeat,
        agreement=args.agreement,
        agreement_from=args.agreement_from,
        seed=args.seed,
    )

    def on_epoch(epoch: int, aligners: AlignerPair) -> None:
        if args.each_epoch and epoch < args.epochs:
            rows = score(aligners, pairs, gold, ["soft"], [0.5])
            print(f"epoch {epoch}: soft 0.5 AER {rows['soft 0.5'][2]}", file=sys.stderr, flush=True)

    start = time.monotonic()
    aligners, report = learn(pairs, config, extra=extra, on_epoch=on_epoch, show_progress=False)
    seconds = time.monotonic() - start
    if args.save:
        aligners.save(args.save)
    rows = score(aligners, pairs, gold, methods, thresholds)
    result = {
        "tag": args.tag,
        "argv": sys.argv[1:],
        "device": describe_device("cpu"),
        "updates": report.updates,
        "epochs": round(report.epochs, 2),
        "train_seconds": round(seconds, 1),
        "rows": rows,
    }
    print(
        f"{args.tag}: {report.updates} updates, {report.epochs:.2f} epochs, {seconds:.0f} s "
        f"({result['device']})"
    )
    for name, (p, r, aer) in rows.items():
        print(f"  {name:22s} P {p:6.2f}  R {r:6.2f}  AER {aer:6.2f}")
    if args.json:
        with args.json.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
