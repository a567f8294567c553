"""Attention weights as word alignments: subword merging, links, Pharaoh files, AER, heatmaps.

A link is a pair (i, j) of a 0-based source word i and a 0-based target word j.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nmtkit.errors import ConfigError, DataError
from nmtkit.files import read_lines

log = logging.getLogger(__name__)

Link = tuple[int, int]
_PHARAOH_LINK = re.compile(r"([0-9]+)([-p])([0-9]+)")
_PLOT_FORMATS = ("png", "svg", "pdf")
_CELL_INCHES = 0.3  # one word per 0.3 in keeps 10 pt labels readable at any sentence length


def _piece_to_word(word_index: Sequence[int], num_pieces: int, side: str) -> np.ndarray:
    """Return the 0/1 matrix [pieces, words] that maps each piece to its word."""
    index = np.asarray(word_index, dtype=np.int64).reshape(-1)
    if len(index) != num_pieces:
        raise ValueError(f"{side}_word_index has {len(index)} entries for {num_pieces} pieces")
    num_words = int(index.max()) + 1 if num_pieces else 0
    if num_pieces and (index.min() < 0 or len(np.unique(index)) != num_words):
        raise ValueError(f"{side}_word_index must number words 0..N-1, each with a piece")
    onehot = np.zeros((num_pieces, num_words))
    onehot[np.arange(num_pieces), index] = 1.0
    return onehot


def merge_to_words(
    weights: np.ndarray,
    *,
    src_word_index: Sequence[int],
    tgt_word_index: Sequence[int],
) -> np.ndarray:
    """Gather attention over subword pieces into attention over words.

    Rows are first renormalized to sum to 1 (the caller has dropped the EOS row and column). A
    source word gets the sum of its pieces' weights (its attention mass) and a target word the
    mean of its pieces' rows, so every row still sums to 1. An all-zero row stays zero.

    Args:
        weights: alpha_ij over pieces, [T_pieces, S_pieces].
        src_word_index: the 0-based word of each source piece, S_pieces entries.
        tgt_word_index: the 0-based word of each target piece, T_pieces entries.

    Returns:
        Word weights, [T_words, S_words].
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 2:
        raise ValueError(f"weights must be [T_pieces, S_pieces], got shape {weights.shape}")
    num_tgt_pieces, num_src_pieces = weights.shape
    src_map = _piece_to_word(src_word_index, num_src_pieces, "src")  # [S_pieces, S_words]
    tgt_map = _piece_to_word(tgt_word_index, num_tgt_pieces, "tgt")  # [T_pieces, T_words]
    totals = weights.sum(axis=1, keepdims=True)  # [T_pieces, 1]
    weights = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
    by_src_word = weights @ src_map  # [T_pieces, S_words]
    tgt_mean = tgt_map / np.maximum(tgt_map.sum(axis=0, keepdims=True), 1.0)
    return tgt_mean.T @ by_src_word  # [T_words, S_words]


def argmax_links(word_weights: np.ndarray) -> list[Link]:
    """Link each target word j to the source word i it attends to most; sorted (i, j) pairs."""
    weights = np.asarray(word_weights)
    if weights.size == 0:
        return []
    return sorted((int(i), j) for j, i in enumerate(weights.argmax(axis=1)))


def threshold_links(word_weights: np.ndarray, threshold: float) -> list[Link]:
    """Link every (i, j) whose weight is at least ``threshold``; sorted (i, j) pairs.

    Raises:
        ConfigError: ``threshold`` is not in (0, 1].
    """
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(f"alignment threshold must be in (0, 1], got {threshold}")
    tgt, src = np.nonzero(np.asarray(word_weights) >= threshold)
    return sorted(zip(src.tolist(), tgt.tolist(), strict=True))


def format_pharaoh(links: Iterable[Link]) -> str:
    """Write links as a Pharaoh line, 'i-j' pairs sorted: '0-0 1-2 2-1'."""
    return " ".join(f"{i}-{j}" for i, j in sorted(set(links)))


def parse_pharaoh(
    line: str,
    *,
    where: str | None = None,
    one_indexed: bool = False,
    reverse: bool = False,
) -> tuple[set[Link], set[Link]]:
    """Read a Pharaoh line into (sure, possible) link sets, with sure a subset of possible.

    'i-j' is a sure link (so also possible) and 'ipj' a possible one only.

    Args:
        where: ``path:line`` named in errors.
        one_indexed: the file counts words from 1 (Och & Ney's Hansards gold); return 0-based.
        reverse: the file writes 'j-i' (target first); return (i, j).

    Raises:
        DataError: a token is not 'i-j' or 'ipj', or is 0 in a one-indexed file.
    """
    sure: set[Link] = set()
    possible: set[Link] = set()
    offset = 1 if one_indexed else 0
    for token in line.split():
        match = _PHARAOH_LINK.fullmatch(token)
        if match is None:
            raise DataError(
                f"malformed alignment link {token!r}",
                where=where,
                hint="expected 'i-j' (sure) or 'ipj' (possible), e.g. '0-1 2p3'",
            )
        i, j = int(match[1]) - offset, int(match[3]) - offset
        if min(i, j) < 0:
            raise DataError(f"alignment link {token!r} has a 0 in a one-indexed file", where=where)
        link = (j, i) if reverse else (i, j)
        possible.add(link)
        if match[2] == "-":
            sure.add(link)
    return sure, possible


def read_pharaoh(
    path: str | Path, *, one_indexed: bool = False, reverse: bool = False
) -> list[tuple[set[Link], set[Link]]]:
    """Read a Pharaoh file ('-' for stdin): one (sure, possible) pair per line, see parse_pharaoh.

    Raises:
        DataError: the file is unreadable or a line is malformed (naming file and line).
    """
    name = "<stdin>" if str(path) == "-" else str(path)
    return [
        parse_pharaoh(line or "", where=f"{name}:{i}", one_indexed=one_indexed, reverse=reverse)
        for i, line in enumerate(read_lines(path), start=1)
    ]


@dataclass(frozen=True, kw_only=True, slots=True)
class AlignmentScores:
    """Alignment quality against sure (S) and possible (P) gold links (Och & Ney, 2003).

    Attributes:
        precision: |A ∩ P| / |A| (0 when nothing is predicted).
        recall: |A ∩ S| / |S| (0 when the gold has no sure link).
        aer: 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|); lower is better.
    """

    precision: float
    recall: float
    aer: float
    num_sentences: int


def alignment_error_rate(
    predicted: Sequence[set[Link]], gold: Sequence[tuple[set[Link], set[Link]]]
) -> AlignmentScores:
    """Score predicted links A against gold (S, P) pairs, counts summed over the corpus.

    Raises:
        DataError: the two lists differ in length, or there is nothing to score.
    """
    if len(predicted) != len(gold):
        raise DataError(f"{len(predicted)} predicted alignments but {len(gold)} gold alignments")
    num_predicted = num_sure = sure_hits = possible_hits = 0
    for links, (sure, possible) in zip(predicted, gold, strict=True):
        links = set(links)
        num_predicted += len(links)
        num_sure += len(sure)
        sure_hits += len(links & sure)
        possible_hits += len(links & (possible | sure))
    if num_predicted + num_sure == 0:
        raise DataError("nothing to score: no predicted and no sure gold links")
    return AlignmentScores(
        precision=possible_hits / num_predicted if num_predicted else 0.0,
        recall=sure_hits / num_sure if num_sure else 0.0,
        aer=1.0 - (sure_hits + possible_hits) / (num_predicted + num_sure),
        num_sentences=len(gold),
    )


def _check_shape(
    word_weights: np.ndarray, src_words: Sequence[str], tgt_words: Sequence[str]
) -> np.ndarray:
    weights = np.asarray(word_weights, dtype=np.float64)
    if weights.shape != (len(tgt_words), len(src_words)):
        raise ValueError(
            f"word_weights has shape {weights.shape}, "
            f"expected [T_words, S_words] = ({len(tgt_words)}, {len(src_words)})"
        )
    return weights


def soft_record(
    src_words: Sequence[str], tgt_words: Sequence[str], word_weights: np.ndarray
) -> dict[str, Any]:
    """Return a ``--soft`` JSON record: the words and weight rows [T_words, S_words], 4 places."""
    weights = _check_shape(word_weights, src_words, tgt_words)
    return {"src": list(src_words), "tgt": list(tgt_words), "weights": weights.round(4).tolist()}


def plot_heatmap(
    word_weights: np.ndarray,
    *,
    src_words: Sequence[str],
    tgt_words: Sequence[str],
    path: Path,
    title: str | None = None,
) -> None:
    """Draw weights as in Bahdanau et al. (2015), Fig. 3 and write them to ``path`` atomically.

    Source words run along the top, target words down the side; 0 is black and 1 white. The
    format (png, svg, pdf) comes from the suffix; ``title`` goes under the matrix.

    Raises:
        ConfigError: matplotlib is not installed, or the suffix is not a known format.
        DataError: the source or target sentence is empty.
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in _PLOT_FORMATS:
        raise ConfigError(
            f"cannot plot to {str(path)!r}: unknown image format", hint="use .png, .svg or .pdf"
        )
    weights = _check_shape(word_weights, src_words, tgt_words)
    if weights.size == 0:
        raise DataError("nothing to plot: the source or target sentence is empty", where=str(path))
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        hint = "pip install nmtkit[plot]"
        raise ConfigError("matplotlib is needed for --plot", hint=hint) from None

    num_tgt, num_src = weights.shape
    fig = Figure(figsize=(_CELL_INCHES * num_src, _CELL_INCHES * num_tgt))
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=1.0)
    ax = fig.add_subplot()
    ax.imshow(weights, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.xaxis.tick_top()
    ax.set_xticks(range(num_src), labels=list(src_words), rotation=90, fontsize=10)
    ax.set_yticks(range(num_tgt), labels=list(tgt_words), fontsize=10)
    if title:
        ax.set_xlabel(title, fontsize=11)
    # A temporary name with the real suffix, so that savefig and any reader see the same format.
    tmp = path.with_name(f"{path.stem}.tmp{path.suffix}")
    try:
        fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    log.debug("wrote attention heatmap %s", path)


# ------------------------------------------------------------------ alignment from a model


@dataclass(frozen=True, kw_only=True)
class WordAlignment:
    """One sentence pair's attention gathered to words, and the links extracted from it."""

    src_words: list[str]
    tgt_words: list[str]
    weights: np.ndarray  # [T_words, S_words], rows sum to 1
    links: list[Link]


def piece_weights_to_words(
    weights: Any, src_pieces: Sequence[str], tgt_pieces: Sequence[str]
) -> np.ndarray:
    """Word-level weights [T_words, S_words] from attention over pieces (a tensor [>=T, >=S]).

    The EOS step and the EOS position (and any padding) are dropped; rows are renormalized.
    """
    from nmtkit.data.text import word_index

    matrix = weights[: len(tgt_pieces), : len(src_pieces)].double().numpy()
    return merge_to_words(
        matrix, src_word_index=word_index(src_pieces), tgt_word_index=word_index(tgt_pieces)
    )


def align_corpus(
    loaded: Any,
    src_lines: Iterable[str],
    tgt_lines: Iterable[str],
    *,
    batch_size: int = 64,
) -> Iterable[WordAlignment]:
    """Force-decode each target with the model and turn its attention into word alignments.

    Args:
        loaded: a :class:`nmtkit.checkpoint.LoadedModel`.
        src_lines, tgt_lines: raw sentence pairs, as many of each.

    Raises:
        DataError: the two sides differ in length.
    """
    import torch

    from nmtkit.data.batching import collate
    from nmtkit.data.text import words

    pairs = iter(zip(src_lines, tgt_lines, strict=True))
    model = loaded.model.eval()
    while chunk := [pair for _, pair in zip(range(batch_size), pairs, strict=False)]:
        src_ids = [loaded.src_text.encode(s)[: loaded.vocab.max_src_len] for s, _ in chunk]
        tgt_ids = [loaded.tgt_text.encode(t) for _, t in chunk]
        with torch.inference_mode():
            batch = collate(src_ids, tgt_ids, list(range(len(chunk))))
            weights = model.force_decode(batch.to(next(model.parameters()).device)).cpu()
        for row, (src, tgt) in enumerate(zip(src_ids, tgt_ids, strict=True)):
            src_pieces = loaded.src_text.id_to_piece(src)
            tgt_pieces = loaded.tgt_text.id_to_piece(tgt)
            if not src_pieces or not tgt_pieces:
                src_words, tgt_words = words(src_pieces), words(tgt_pieces)
                yield WordAlignment(
                    src_words=src_words,
                    tgt_words=tgt_words,
                    weights=np.zeros((len(tgt_words), len(src_words))),
                    links=[],
                )
                continue
            merged = piece_weights_to_words(weights[row], src_pieces, tgt_pieces)
            yield WordAlignment(
                src_words=words(src_pieces),
                tgt_words=words(tgt_pieces),
                weights=merged,
                links=argmax_links(merged),
            )


def align_files(
    model_path: str | Path,
    src_path: Path,
    tgt_path: Path,
    *,
    output: str = "-",
    soft: bool = False,
    plot_dir: Path | None = None,
    plot_format: str = "png",
    limit: int | None = None,
    batch_size: int = 64,
    device: str = "cpu",
    threads: int | None = None,
) -> int:
    """Align a parallel corpus with a model: Pharaoh lines (or soft JSON) and heatmaps.

    Returns:
        The number of pairs aligned.

    Raises:
        DataError: missing files, different line counts, invalid UTF-8.
        ConfigError: an unknown plot format, a negative limit, a batch size below 1, or
            matplotlib missing for ``plot_dir``.
    """
    import json
    import sys

    import torch

    from nmtkit.checkpoint import load_model
    from nmtkit.files import atomic_write, count_lines

    if plot_format not in _PLOT_FORMATS:
        raise ConfigError(
            f"unknown plot format {plot_format!r}; formats: {', '.join(_PLOT_FORMATS)}"
        )
    if limit is not None and limit < 0:
        raise ConfigError(f"--limit must be 0 or more, got {limit}")
    if batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1, got {batch_size}")
    num_src, num_tgt = count_lines(src_path), count_lines(tgt_path)
    if num_src != num_tgt:
        raise DataError(f"{src_path} has {num_src} lines but {tgt_path} has {num_tgt}")
    if threads:
        torch.set_num_threads(threads)
    loaded = load_model(model_path, device=device)
    src_lines = (line or "" for line in itertools.islice(read_lines(src_path), limit))
    tgt_lines = (line or "" for line in itertools.islice(read_lines(tgt_path), limit))
    if plot_dir is not None:
        plot_dir.mkdir(parents=True, exist_ok=True)
    count = 0
    with contextlib.ExitStack() as stack:
        stream = sys.stdout if output == "-" else stack.enter_context(atomic_write(output))
        for count, item in enumerate(
            align_corpus(loaded, src_lines, tgt_lines, batch_size=batch_size), 1
        ):
            record = soft_record(item.src_words, item.tgt_words, item.weights) if soft else None
            stream.write(
                json.dumps(record, ensure_ascii=False) + "\n"
                if soft
                else format_pharaoh(item.links) + "\n"
            )
            if plot_dir is not None and item.links:
                plot_heatmap(
                    item.weights,
                    src_words=item.src_words,
                    tgt_words=item.tgt_words,
                    path=plot_dir / f"{count:05d}.{plot_format}",
                    title=f"pair {count}",
                )
    return count
