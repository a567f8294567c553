"""Align a parallel corpus by learning to align it: files in, Pharaoh links (and heatmaps) out.

The library behind ``nmtkit align --learn`` and ``nmtkit align --aligner``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nmtkit.alignment.gold import AlignmentScores, GoldFile, alignment_error_rate
from nmtkit.alignment.heatmap import PLOT_FORMATS, plot_heatmap
from nmtkit.alignment.links import Link
from nmtkit.alignment.neural import extract
from nmtkit.alignment.neural.aligners import AlignerEnsemble, Pair
from nmtkit.alignment.neural.learner import LearnConfig, LearnReport, learn_ensemble
from nmtkit.alignment.pharaoh import format_pharaoh
from nmtkit.errors import ConfigError
from nmtkit.files import read_pairs
from nmtkit.outputs import open_output


@dataclass(frozen=True, kw_only=True, slots=True)
class Extraction:
    """How links are read off the posteriors, and where they go.

    Attributes:
        method: see :mod:`nmtkit.alignment.neural.extract`.
        threshold: the least mean posterior of a ``soft`` link.
        output: Pharaoh file ('-' for stdout; None writes nothing).
        plot_dir: one heatmap per pair in this folder.
        plot_format: png, svg or pdf.
    """

    method: str = extract.DEFAULT_METHOD
    threshold: float = extract.DEFAULT_THRESHOLD
    output: str | None = "-"
    plot_dir: Path | None = None
    plot_format: str = "png"

    def __post_init__(self) -> None:
        extract.check_method(self.method)
        if not 0 < self.threshold <= 1:
            raise ConfigError("the threshold must be in (0, 1]")
        if self.plot_format not in PLOT_FORMATS:
            raise ConfigError(
                f"unknown plot format {self.plot_format!r}",
                hint=f"one of {', '.join(PLOT_FORMATS)}",
            )


@dataclass(frozen=True, slots=True)
class LearnedAlignment:
    """What :func:`learn_and_align` did: the links, the training report and the gold scores."""

    links: list[list[Link]]
    learned: list[LearnReport]
    scores: AlignmentScores | None


def read_tokenized_pairs(
    src_path: str | Path, tgt_path: str | Path, *, lowercase: bool, limit: int | None = None
) -> list[Pair]:
    """Whitespace-tokenized sentence pairs of two line-aligned files (``.gz`` too), the first
    ``limit`` of them.

    Raises:
        DataError: a file is unreadable, not UTF-8, or the line counts differ (naming both;
            see :func:`nmtkit.files.read_pairs`).
    """
    pairs: list[Pair] = []
    for src, tgt in itertools.islice(read_pairs(src_path, tgt_path), limit):
        if lowercase:
            src, tgt = src.lower(), tgt.lower()
        pairs.append((src.split(), tgt.split()))
    return pairs


def learn_and_align(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    config: LearnConfig | None = None,
    aligner: AlignerEnsemble | None = None,
    extra: Sequence[tuple[str | Path, str | Path]] = (),
    extraction: Extraction | None = None,
    lowercase: bool = True,
    save: str | Path | None = None,
    gold: GoldFile | None = None,
    show_progress: bool = True,
) -> LearnedAlignment:
    """Learn an aligner pair on the corpus (plus ``extra`` corpora), or use ``aligner``, and
    write its links.

    Args:
        src_path, tgt_path: the corpus to align, tokenized (words split by spaces).
        config: how to learn; ignored when ``aligner`` is given.
        aligner: aligners learned before (:meth:`AlignerEnsemble.load`): align without
            training.
        extra: more (source, target) files to learn from, tokenized the same way.
        lowercase: lowercase every side first (the Hansards gold and most aligners do); an
            ``aligner`` reads the text as it was learned, whatever this says.
        save: write the learned pair here.
        gold: score the links against this gold alignment.

    Raises:
        DataError: unreadable files, different line counts, a word the ``aligner`` never saw.
        ConfigError: a bad option.
    """
    extraction = extraction or Extraction()
    if aligner is not None:
        lowercase = aligner.lowercase  # read the text as the aligner learned it
    pairs = read_tokenized_pairs(src_path, tgt_path, lowercase=lowercase)
    reports: list[LearnReport] = []
    if aligner is None:
        extra_pairs = [
            pair
            for src, tgt in extra
            for pair in read_tokenized_pairs(src, tgt, lowercase=lowercase)
        ]
        aligner, reports = learn_ensemble(
            pairs, config or LearnConfig(), extra=extra_pairs, show_progress=show_progress
        )
        aligner.lowercase = lowercase
        if save is not None:
            aligner.save(save)
    posteriors = aligner.posteriors(pairs)
    links = [
        extract.links(fwd, rev, method=extraction.method, threshold=extraction.threshold)
        for fwd, rev in posteriors
    ]
    if extraction.output is not None:
        _write_links(extraction.output, links)
    if extraction.plot_dir is not None:
        extraction.plot_dir.mkdir(parents=True, exist_ok=True)
        for number, ((src, tgt), (fwd, rev)) in enumerate(zip(pairs, posteriors, strict=True), 1):
            if src and tgt:
                plot_heatmap(
                    extract.word_weights(fwd, rev),
                    src_words=src,
                    tgt_words=tgt,
                    path=extraction.plot_dir / f"{number:05d}.{extraction.plot_format}",
                    title=f"pair {number}",
                )
    scores = None
    if gold is not None:
        scores = alignment_error_rate(
            links, gold.read(), predicted_name=str(src_path), gold_name=str(gold.path)
        )
    return LearnedAlignment(links, reports, scores)


def _write_links(output: str, links: list[list[Link]]) -> None:
    with open_output(output) as stream:
        stream.write("".join(format_pharaoh(pair) + "\n" for pair in links))
