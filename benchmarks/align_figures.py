"""Pictures of nmtkit's learned alignment next to eflomal's, one per chosen Hansards pair.

Each picture has two panels in one geometry, English along the top and French down the side
(as ``nmtkit align --plot`` draws them). Left: the mean posterior of the learned aligner's two
directions (``extract.word_weights``; 0 black, 1 white) with the links it extracts (``--method``,
default soft) as red dots. Right: eflomal's links, read from a Pharaoh file (0-based
source-target, one line per pair), as a 0/1 matrix. With ``--gold``, the gold sure links are
outlined in both panels, for the eye only: nothing is scored here.

    B=bench-out/alignment
    python benchmarks/align_figures.py --aligner $B/aligner.default.pt \\
        --source $B/text/hansards.en --target $B/text/hansards.fr \\
        --eflomal $B/links/eflomal.lowercased.intersection --out $B/figures \\
        --gold ../shared/data/alignment/enfr.gold --gold-one-indexed --pairs 3,17,40

Without ``--pairs``, it draws ``--count`` pairs with ``--min-words`` to ``--max-words`` words on
each side, spread evenly over the file. The aligner reads the text as it learned it
(lowercased unless it was learned with ``--keep-case``); the labels show the words as they are
in the files.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nmtkit.alignment.heatmap import PLOT_FORMATS
from nmtkit.alignment.links import Link
from nmtkit.alignment.neural import extract
from nmtkit.alignment.pharaoh import read_pharaoh
from nmtkit.errors import NmtkitError
from nmtkit.outputs import save_figure

CELL_INCHES = 0.3  # as nmtkit/alignment/heatmap.py: 10 pt labels stay readable
LINK_COLOR = "red"
GOLD_COLOR = "deepskyblue"


def parse_pairs(text: str) -> list[int]:
    """'3,17,40' -> [3, 17, 40] (1-based pair numbers)."""
    try:
        numbers = [int(item) for item in text.replace(" ", "").split(",") if item]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a comma-separated list of numbers: {text!r}"
        ) from None
    if not numbers or min(numbers) < 1:
        raise argparse.ArgumentTypeError(f"pair numbers count from 1: {text!r}")
    return numbers


def choose_pairs(
    pairs: Sequence[tuple[Sequence[str], Sequence[str]]], low: int, high: int, count: int
) -> list[int]:
    """``count`` 1-based pair numbers, evenly spread over the pairs with ``low`` to ``high`` words
    on each side."""
    fitting = [
        number
        for number, (src, tgt) in enumerate(pairs, 1)
        if low <= len(src) <= high and low <= len(tgt) <= high
    ]
    if len(fitting) <= count:
        return fitting
    step = (len(fitting) - 1) / max(1, count - 1)
    return sorted({fitting[round(k * step)] for k in range(count)})


def check_links(links: list[Link], num_src: int, num_tgt: int, where: str) -> None:
    """Raise SystemExit naming ``where`` when a link falls outside the pair."""
    for i, j in links:
        if i >= num_src or j >= num_tgt:
            raise SystemExit(
                f"[align-figures] {where}: link {i}-{j} outside a pair of {num_src} source and "
                f"{num_tgt} target words (0-based source-target links expected)"
            )


def draw(
    weights: np.ndarray,
    ours: list[Link],
    theirs: list[Link],
    gold: list[Link] | None,
    *,
    src_words: Sequence[str],
    tgt_words: Sequence[str],
    titles: tuple[str, str],
    path: Path,
) -> None:
    """Two panels side by side: ``weights`` [J, I] with ``ours`` as dots, ``theirs`` as 0/1."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    num_tgt, num_src = weights.shape
    fig = Figure(figsize=(2 * CELL_INCHES * num_src + 2.0, CELL_INCHES * num_tgt))
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=1.0, wspace=0.05)
    left, right = fig.subplots(1, 2)
    theirs_matrix = np.zeros_like(weights)
    for i, j in theirs:
        theirs_matrix[j, i] = 1.0
    for ax, matrix, title in ((left, weights, titles[0]), (right, theirs_matrix, titles[1])):
        ax.imshow(matrix, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.xaxis.tick_top()
        ax.set_xticks(range(num_src), labels=list(src_words), rotation=90, fontsize=10)
        ax.set_yticks(range(num_tgt), labels=list(tgt_words), fontsize=10)
        ax.set_xlabel(title, fontsize=11)
        for i, j in gold or ():
            ax.add_patch(
                Rectangle(
                    (i - 0.5, j - 0.5),
                    1,
                    1,
                    fill=False,
                    edgecolor=GOLD_COLOR,
                    linewidth=1.5,
                    clip_on=False,
                )
            )
    right.yaxis.tick_right()  # the French words on the outer sides, the two matrices close
    if ours:
        src_index, tgt_index = zip(*ours, strict=True)
        left.scatter(src_index, tgt_index, s=12, color=LINK_COLOR, marker="o", linewidths=0)
    left.set_xlim(-0.5, num_src - 0.5)
    left.set_ylim(num_tgt - 0.5, -0.5)
    save_figure(fig, path, path.suffix.lstrip("."))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aligner", type=Path, required=True, help="from --save-aligner")
    parser.add_argument("--source", type=Path, required=True, help="the English side")
    parser.add_argument("--target", type=Path, required=True, help="the French side")
    parser.add_argument("--eflomal", type=Path, required=True, help="eflomal's Pharaoh links")
    parser.add_argument("--eflomal-label", default=None, help="[default: the file's name]")
    parser.add_argument("--out", type=Path, default=Path("bench-out/alignment/figures"))
    parser.add_argument("--pairs", type=parse_pairs, default=None, help="1-based, e.g. 3,17,40")
    parser.add_argument("--count", type=int, default=4, help="pairs drawn without --pairs")
    parser.add_argument("--min-words", type=int, default=8)
    parser.add_argument("--max-words", type=int, default=16)
    parser.add_argument("--method", choices=extract.METHODS, default="soft", help="links marked")
    parser.add_argument("--threshold", type=float, default=0.5, help="of --method soft")
    parser.add_argument("--gold", type=Path, default=None, help="outline its sure links")
    parser.add_argument("--gold-one-indexed", action="store_true")
    parser.add_argument("--format", choices=PLOT_FORMATS, default="png")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if not 0 < args.threshold <= 1:
        parser.error("--threshold must be in (0, 1]")
    try:
        run(args)
    except NmtkitError as exc:
        raise SystemExit(f"[align-figures] {exc}") from None


def run(args: argparse.Namespace) -> None:
    import torch

    from nmtkit.alignment.neural.aligners import AlignerEnsemble
    from nmtkit.alignment.neural.learned_alignment import read_tokenized_pairs

    torch.set_num_threads(args.threads)
    shown = read_tokenized_pairs(args.source, args.target, lowercase=False)
    theirs = [possible for _, possible in read_pharaoh(args.eflomal)]
    gold = None
    if args.gold is not None:
        gold = [sure for sure, _ in read_pharaoh(args.gold, one_indexed=args.gold_one_indexed)]
    for name, lines in (("--eflomal", theirs), ("--gold", gold)):
        if lines is not None and len(lines) != len(shown):
            raise SystemExit(
                f"[align-figures] {name} has {len(lines)} lines for {len(shown)} pairs in "
                f"{args.source}"
            )
    numbers = args.pairs or choose_pairs(shown, args.min_words, args.max_words, args.count)
    if not numbers:
        raise SystemExit(
            f"[align-figures] no pair has {args.min_words}-{args.max_words} words on each side"
        )
    if max(numbers) > len(shown):
        raise SystemExit(
            f"[align-figures] pair {max(numbers)} is past the end: {args.source} has {len(shown)}"
        )
    for number in numbers:
        if not (shown[number - 1][0] and shown[number - 1][1]):
            raise SystemExit(f"[align-figures] pair {number} has an empty side: nothing to draw")

    aligner = AlignerEnsemble.load(args.aligner)
    read = read_tokenized_pairs(args.source, args.target, lowercase=aligner.lowercase)
    # All pairs up to the last one drawn, so that an error names the pair by its line number.
    every = aligner.posteriors(read[: max(numbers)])
    posteriors = [every[number - 1] for number in numbers]
    label = args.eflomal_label or args.eflomal.name
    args.out.mkdir(parents=True, exist_ok=True)
    for number, (forward, reverse) in zip(numbers, posteriors, strict=True):
        src, tgt = shown[number - 1]
        ours = extract.links(forward, reverse, method=args.method, threshold=args.threshold)
        efl = sorted(theirs[number - 1])
        check_links(efl, len(src), len(tgt), f"{args.eflomal}:{number}")
        sure = sorted(gold[number - 1]) if gold is not None else None
        if sure is not None:
            check_links(sure, len(src), len(tgt), f"{args.gold}:{number}")
        outlines = "\nblue outlines: gold sure links" if sure is not None else ""
        titles = (
            f"nmtkit align --learn, pair {number}\nmean posterior of both directions\n"
            f"red dots: its {args.method} links{outlines}",
            f"eflomal, pair {number}\n{label}\nwhite: its links{outlines}",
        )
        path = args.out / f"pair-{number:03d}.{args.format}"
        draw(
            extract.word_weights(forward, reverse),
            ours,
            efl,
            sure,
            src_words=src,
            tgt_words=tgt,
            titles=titles,
            path=path,
        )
        print(path)


if __name__ == "__main__":
    main()
