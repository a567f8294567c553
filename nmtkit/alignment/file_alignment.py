"""Align files with trained models: the options checked, the models loaded, the pairs read, and
Pharaoh lines, soft JSON records, heatmaps and gold scores written (``nmtkit align``)."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from nmtkit.alignment.attention_links import (
    WordAlignment,
    align_corpus,
    is_bidirectional,
    require_alignment,
    symmetrize_corpus,
)
from nmtkit.alignment.gold import AlignmentScores, GoldFile, alignment_error_rate
from nmtkit.alignment.heatmap import PLOT_FORMATS, plot_heatmap, soft_record
from nmtkit.alignment.links import Link
from nmtkit.alignment.pharaoh import format_pharaoh
from nmtkit.alignment.symmetrize import SYMMETRIZERS
from nmtkit.errors import ConfigError, unknown_name
from nmtkit.files import check_line_counts, count_lines, read_lines
from nmtkit.outputs import check_writable, check_writable_dir, open_output

if TYPE_CHECKING:  # torch is imported only when a model runs: --evaluate needs none
    from nmtkit.search.length_policy import LengthPolicy


@dataclass(frozen=True, kw_only=True, slots=True)
class AlignReport:
    """What :func:`align_files` did: pairs aligned, and their scores when a gold was given."""

    num_pairs: int
    scores: AlignmentScores | None


@dataclass(frozen=True, kw_only=True, slots=True)
class AlignOutput:
    """What :func:`align_files` writes, and where.

    Attributes:
        path: the Pharaoh lines ('-' for stdout; None for none, e.g. when only scoring).
        soft: write each pair's word weights as a JSON line instead of its links.
        plot_dir: write one heatmap per pair into this folder.
        plot_format: the heatmaps' format: png, svg or pdf.
    """

    path: str | None = "-"
    soft: bool = False
    plot_dir: Path | None = None
    plot_format: str = "png"


def _check_options(
    method: str,
    *,
    reverse_model: object | None,
    threshold: float,
    output: AlignOutput,
    limit: int | None,
    batch_size: int,
) -> None:
    """Reject bad ``align`` options before any file is read or model loaded."""
    bidirectional = is_bidirectional(method)
    if bidirectional and reverse_model is None:
        raise ConfigError(
            f"--method {method} combines both directions",
            hint="give --reverse-model, a model trained target->source",
        )
    if not bidirectional and reverse_model is not None:
        raise ConfigError(
            f"--reverse-model is not used by --method {method}",
            hint=f"the bidirectional methods are {', '.join(SYMMETRIZERS)}",
        )
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(f"--threshold must be in (0, 1], got {threshold}")
    if output.plot_format not in PLOT_FORMATS:
        raise unknown_name("plot format", output.plot_format, PLOT_FORMATS)
    if limit is not None and limit < 0:
        raise ConfigError(f"--limit must be 0 or more, got {limit}")
    if batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1, got {batch_size}")


def _check_lines(src_path: Path, tgt_path: Path, gold: GoldFile | None) -> None:
    """Require one line per pair in the source, the target and the gold file."""
    num_src = count_lines(src_path)
    check_line_counts(src_path, num_src, tgt_path, count_lines(tgt_path))
    if gold is not None:
        check_line_counts(src_path, num_src, f"gold {gold.path}", count_lines(gold.path))


def _check_directions(forward: Any, reverse: Any, reverse_path: str | Path) -> None:
    """Require the reverse model to translate the other way round."""
    want = (forward.vocab.tgt_lang, forward.vocab.src_lang)
    got = (reverse.vocab.src_lang, reverse.vocab.tgt_lang)
    if got != want:
        raise ConfigError(
            f"--reverse-model {reverse_path} translates {got[0]}->{got[1]}, "
            f"expected {want[0]}->{want[1]}"
        )


def _lines(path: Path, limit: int | None) -> Iterator[str]:
    return (line or "" for line in itertools.islice(read_lines(path), limit))


def _write(stream: IO[str] | None, item: WordAlignment, number: int, output: AlignOutput) -> None:
    """Write one pair's Pharaoh line (or soft record) and its heatmap, as ``output`` says."""
    if stream is not None:
        if output.soft:
            record = soft_record(item.src_words, item.tgt_words, item.weights)
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            stream.write(format_pharaoh(item.links) + "\n")
    if output.plot_dir is not None and item.links:
        plot_heatmap(
            item.weights,
            src_words=item.src_words,
            tgt_words=item.tgt_words,
            path=output.plot_dir / f"{number:05d}.{output.plot_format}",
            title=f"pair {number}",
        )


def _alignments(
    model_paths: Sequence[str | Path],
    reverse_model_path: str | Path | None,
    src_path: Path,
    tgt_path: Path,
    *,
    method: str,
    threshold: float,
    limit: int | None,
    batch_size: int,
    device: str,
    lengths: LengthPolicy | None = None,
    precision: str = "fp32",
    keep_weights: bool = True,
) -> Iterator[WordAlignment]:
    """Load the model or ensemble (and the reverse model) and align the pairs with
    ``method``; ``keep_weights`` as :func:`align_corpus` says."""
    from nmtkit.checkpoint import load_model
    from nmtkit.search.ensemble import check_vocabularies

    forward, *others = [load_model(path, device=device) for path in model_paths]
    for loaded, path in zip((forward, *others), model_paths, strict=True):
        require_alignment(loaded, path)
    check_vocabularies(
        [loaded.vocab.fingerprint for loaded in (forward, *others)],
        names=[str(loaded.path) for loaded in (forward, *others)],
    )
    src_lines, tgt_lines = _lines(src_path, limit), _lines(tgt_path, limit)
    if reverse_model_path is None:
        return align_corpus(
            forward,
            src_lines,
            tgt_lines,
            method=method,
            threshold=threshold,
            batch_size=batch_size,
            lengths=lengths,
            precision=precision,
            ensemble_with=others,
            keep_weights=keep_weights,
        )
    reverse = load_model(reverse_model_path, device=device)
    require_alignment(reverse, reverse_model_path)
    _check_directions(forward, reverse, reverse_model_path)
    # Each direction links every target word to its argmax source word; then they combine.
    one_way = align_corpus(
        forward,
        src_lines,
        tgt_lines,
        batch_size=batch_size,
        lengths=lengths,
        precision=precision,
        ensemble_with=others,
        keep_weights=keep_weights,
    )
    back_lines, forth_lines = _lines(tgt_path, limit), _lines(src_path, limit)
    other_way = align_corpus(
        reverse,
        back_lines,
        forth_lines,
        batch_size=batch_size,
        lengths=lengths,
        precision=precision,
        keep_weights=False,  # the forward weights are the ones kept
    )
    return symmetrize_corpus(one_way, other_way, method=method)


def align_files(
    model_path: str | Path | Sequence[str | Path],
    src_path: Path,
    tgt_path: Path,
    *,
    method: str = "argmax",
    threshold: float = 0.5,
    reverse_model_path: str | Path | None = None,
    output: AlignOutput | None = None,
    gold: GoldFile | None = None,
    limit: int | None = None,
    batch_size: int = 64,
    device: str = "cpu",
    threads: int | None = None,
    lengths: LengthPolicy | None = None,
    precision: str = "fp32",
) -> AlignReport:
    """Align a parallel corpus with a model (or two): Pharaoh lines or soft JSON, heatmaps, scores.

    Args:
        model_path: the source->target model, or a sequence of them: an ensemble of models of
            one vocabulary, whose attention weights are averaged (the first one's text
            pipelines).
        method: an extraction method (``argmax``, ``threshold``) or, with
            ``reverse_model_path``, a bidirectional one (``grow-diag-final``, ...).
        threshold: the least weight a link needs, for ``threshold``.
        reverse_model_path: a target->source model for the bidirectional methods.
        output: what to write and where (default: Pharaoh lines on stdout).
        gold: score the links against this gold alignment (one line per pair).
        limit: only the first N pairs (and gold lines).
        batch_size: the most pairs in a batch.
        lengths: how long pairs are cut and batched (:func:`align_corpus`).
        precision: of the matrix products: ``fp32``, ``bf16``, ``auto`` or ``int8``
            (:func:`align_corpus`).

    Raises:
        DataError: missing files, different line counts, invalid UTF-8, a malformed gold.
        ConfigError: an unknown method, plot format or precision, a missing or unneeded
            reverse model, a threshold, limit or batch size out of range, matplotlib missing for
            plots, torchao missing for int8, a model whose attention is not an alignment
            (:func:`require_alignment`), no model, or ensemble models of different
            vocabularies.
    """
    import torch

    from nmtkit.runtime import resolve_search_precision, tune_allocator

    model_paths = [model_path] if isinstance(model_path, str | Path) else list(model_path)
    if not model_paths:
        raise ConfigError("no model to align with", hint="give one with --model")
    output = output or AlignOutput()
    _check_options(
        method,
        reverse_model=reverse_model_path,
        threshold=threshold,
        output=output,
        limit=limit,
        batch_size=batch_size,
    )
    resolve_search_precision(precision, device)  # an unknown precision fails before any work
    _check_lines(src_path, tgt_path, gold)
    if output.path is not None:
        check_writable(output.path)  # before the model loads, so that no work is lost
    if output.plot_dir is not None:
        check_writable_dir(output.plot_dir)
    gold_links = gold.read()[:limit] if gold is not None else []
    if threads:
        torch.set_num_threads(threads)
    # Freed blocks reused: glibc's own moving mmap threshold let each decoding step's [S, A]
    # attention block strand the last one, so memory grew with T x S x A.
    tune_allocator()
    items = _alignments(
        model_paths,
        reverse_model_path,
        src_path,
        tgt_path,
        method=method,
        threshold=threshold,
        limit=limit,
        batch_size=batch_size,
        device=device,
        lengths=lengths,
        precision=precision,
        keep_weights=output.soft or output.plot_dir is not None,  # else long pairs in blocks
    )
    if output.plot_dir is not None:
        output.plot_dir.mkdir(parents=True, exist_ok=True)
    predicted: list[list[Link]] = []
    count = 0
    with contextlib.ExitStack() as stack:
        stream = _open_output(output.path, stack)
        for count, item in enumerate(items, start=1):
            _write(stream, item, count, output)
            if gold is not None:
                predicted.append(item.links)
    if gold is None:
        return AlignReport(num_pairs=count, scores=None)
    scores = alignment_error_rate(
        predicted,
        gold_links,
        predicted_name=f"the alignments of {src_path}",
        gold_name=str(gold.path),
    )
    return AlignReport(num_pairs=count, scores=scores)


def _open_output(path: str | None, stack: contextlib.ExitStack) -> IO[str] | None:
    if path is None:
        return None
    return stack.enter_context(open_output(path))
