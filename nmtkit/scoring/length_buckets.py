"""BLEU by sentence length, as in Bahdanau et al. (2015), Figure 2, and that figure's plot.

Sentences fall into buckets by their length in words (the raw line split on whitespace); each
bucket's BLEU is the corpus BLEU of its sentences, with the settings of :func:`evaluate.score`.
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmtkit.errors import ConfigError, DataError, unknown_name
from nmtkit.outputs import check_writable, save_figure
from nmtkit.scoring.metrics import MetricScore, score

log = logging.getLogger(__name__)

DEFAULT_EDGES = (0, 10, 20, 30, 40, 50)
BUCKET_BY = ("source", "reference")
_PLOT_FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True, kw_only=True, slots=True)
class LengthBucket:
    """Sentences of ``low <= length < high`` words (no upper bound when ``high`` is None).

    Attributes:
        num_sentences: how many sentences fall in the bucket.
        bleu: corpus BLEU of those sentences, one per system; None when the bucket is empty.
    """

    low: int
    high: int | None
    num_sentences: int
    bleu: tuple[float | None, ...]

    @property
    def label(self) -> str:
        """'0-9' for [0, 10), '7' for [7, 8), '50+' for [50, inf)."""
        if self.high is None:
            return f"{self.low}+"
        last = self.high - 1
        return str(self.low) if last == self.low else f"{self.low}-{last}"


@dataclass(frozen=True, kw_only=True, slots=True)
class LengthReport:
    """BLEU per length bucket for each system.

    Attributes:
        by: what was measured, 'source' or 'reference' (the first reference stream).
        edges: the bucket edges, e.g. (0, 10, 20): [0, 10), [10, 20), [20, inf).
        signature: sacrebleu's BLEU signature, shared by every bucket.
    """

    by: str
    edges: tuple[int, ...]
    buckets: tuple[LengthBucket, ...]
    signature: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict; each bucket's ``bleu`` follows the order of the systems."""
        return {
            "by": self.by,
            "edges": list(self.edges),
            "signature": self.signature,
            "buckets": [
                {
                    "label": b.label,
                    "low": b.low,
                    "high": b.high,
                    "num_sentences": b.num_sentences,
                    "bleu": list(b.bleu),
                }
                for b in self.buckets
            ],
        }


def parse_buckets(text: str) -> tuple[int, ...]:
    """Parse bucket edges such as '0,10,20,30,40,50': increasing whole numbers starting at 0.

    Raises:
        ConfigError: not a comma-separated list of such numbers.
    """
    where = f"--buckets {text!r}"
    hint = "give increasing word counts from 0, e.g. 0,10,20,30,40,50"
    try:
        edges = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ConfigError("bucket edges must be whole numbers", where=where, hint=hint) from None
    return check_edges(edges, where=where, hint=hint)


def check_edges(
    edges: Sequence[int], *, where: str = "buckets", hint: str | None = None
) -> tuple[int, ...]:
    """Return ``edges`` as a tuple if they start at 0 and increase strictly.

    Starting at 0 puts every sentence, the empty ones too, into a bucket.

    Raises:
        ConfigError: otherwise.
    """
    if not edges or edges[0] != 0:
        raise ConfigError("the first bucket edge must be 0", where=where, hint=hint)
    if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ConfigError("bucket edges must increase", where=where, hint=hint)
    return tuple(edges)


def sentence_lengths(lines: Sequence[str]) -> list[int]:
    """Return each line's length in words, split on whitespace."""
    return [len(line.split()) for line in lines]


def assign_buckets(lengths: Sequence[int], edges: Sequence[int]) -> list[int]:
    """Return the bucket index of each length: bucket k holds ``edges[k] <= length < edges[k+1]``.

    ``edges`` start at 0 (see :func:`check_edges`); the last bucket has no upper bound.
    """
    return [bisect_right(edges, length) - 1 for length in lengths]


def bleu_by_length(
    systems: Sequence[Sequence[str]],
    refs: Sequence[Sequence[str]],
    lengths: Sequence[int],
    *,
    by: str = "reference",
    edges: Sequence[int] = DEFAULT_EDGES,
    lowercase: bool = False,
    tokenize: str | None = None,
) -> LengthReport:
    """Return the corpus BLEU of each system on the sentences of each length bucket.

    Args:
        systems: hypotheses of each system, one per sentence.
        refs: reference streams, as for :func:`nmtkit.scoring.metrics.score`.
        lengths: the length of each sentence that decides its bucket (see ``by``).
        by: 'source' or 'reference': what ``lengths`` measure, recorded in the report.
        edges: bucket edges (see :func:`check_edges`).
        lowercase, tokenize: BLEU options, as for :func:`nmtkit.scoring.metrics.score`.

    Raises:
        ConfigError: bad edges, an unknown ``by`` or tokenizer.
        DataError: ``lengths``, a system or a reference stream of another length.
    """
    edges = check_edges(edges)
    if by not in BUCKET_BY:
        raise unknown_name("bucket measure", by, BUCKET_BY)
    for stream in [*systems, *refs]:
        if len(stream) != len(lengths):
            raise DataError(f"{len(lengths)} lengths given for {len(stream)} sentences")
    if not lengths:
        raise DataError("nothing to score: there are no sentences")
    members: list[list[int]] = [[] for _ in edges]
    for index, bucket in enumerate(assign_buckets(lengths, edges)):
        members[bucket].append(index)
    buckets: list[LengthBucket] = []
    signatures: set[str] = set()
    for k, indices in enumerate(members):
        bucket_refs = [[stream[i] for i in indices] for stream in refs]
        scores = [
            _bucket_bleu([hyps[i] for i in indices], bucket_refs, lowercase, tokenize)
            for hyps in systems
        ]
        signatures.update(s.signature for s in scores if s is not None)
        high = edges[k + 1] if k + 1 < len(edges) else None
        bleu = tuple(None if s is None else s.score for s in scores)
        buckets.append(LengthBucket(low=edges[k], high=high, num_sentences=len(indices), bleu=bleu))
    (signature,) = signatures  # one BLEU configuration for every bucket
    log.info("BLEU by %s length in %d buckets", by, len(buckets))
    return LengthReport(by=by, edges=edges, buckets=tuple(buckets), signature=signature)


def _bucket_bleu(
    hyps: list[str], refs: list[list[str]], lowercase: bool, tokenize: str | None
) -> MetricScore | None:
    if not hyps:
        return None
    report = score(hyps, refs, metrics=["bleu"], lowercase=lowercase, tokenize=tokenize)
    return report.scores[0]


def check_plot(path: str | Path) -> str:
    """Return the image format of ``path`` (png, svg, pdf) if matplotlib can draw it.

    Raises:
        ConfigError: matplotlib is not installed, or the suffix is not a known format.
        DataError: the folder to write into does not exist, or ``path`` cannot be written.
    """
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in _PLOT_FORMATS:
        raise ConfigError(
            f"cannot plot to {str(path)!r}: unknown image format", hint="use .png, .svg or .pdf"
        )
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError(
            "matplotlib is needed for --plot", hint="pip install nmtkit[plot]"
        ) from None
    if not Path(path).parent.exists():
        raise DataError("no such folder to write the plot into", where=str(Path(path).parent))
    check_writable(path)  # a file or folder in the way, a read-only place: before any scoring
    return fmt


def plot_bleu_by_length(
    report: LengthReport, names: Sequence[str], path: str | Path, *, title: str | None = None
) -> None:
    """Draw BLEU against sentence length, one line per system, and write it to ``path`` atomically.

    This is Figure 2 of Bahdanau et al. (2015); the format (png, svg, pdf) comes from the suffix.
    Empty buckets leave a gap in the lines.

    Raises:
        ConfigError: matplotlib is not installed, or the suffix is not a known format.
        DataError: the folder to write into does not exist.
    """
    path = Path(path)
    fmt = check_plot(path)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 4.0))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    positions = range(len(report.buckets))
    for k, name in enumerate(names):
        values = [_or_nan(b.bleu[k]) for b in report.buckets]
        ax.plot(positions, values, marker="o", label=name)
    ax.set_xticks(positions, labels=[b.label for b in report.buckets])
    ax.set_xlabel(f"Sentence length ({report.by} words)")
    ax.set_ylabel("BLEU score")
    ax.grid(alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    save_figure(fig, path, fmt)
    log.info("wrote BLEU by length to %s", path)


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value
