"""Align sentence pairs with trained models: attention as word links, one or both directions.

A link is a pair (i, j) of a 0-based source word i and a 0-based target word j. One direction's
links come from its attention by an extraction method (``argmax``, ``threshold``); the
bidirectional methods (``grow-diag-final`` and others) combine a source->target model's links
with a target->source model's.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from nmtkit.alignment.gold import AlignmentScores, GoldFile, alignment_error_rate
from nmtkit.alignment.heatmap import PLOT_FORMATS, plot_heatmap, soft_record
from nmtkit.alignment.links import (
    EXTRACTORS,
    Extractor,
    Link,
    extractor,
    piece_weights_to_words,
)
from nmtkit.alignment.pharaoh import format_pharaoh
from nmtkit.alignment.symmetrize import SYMMETRIZERS, symmetrizer
from nmtkit.errors import ConfigError, DataError, unknown_name
from nmtkit.files import atomic_write, check_writable, check_writable_dir, count_lines, read_lines

if TYPE_CHECKING:  # torch is imported only when a model runs: --evaluate needs none
    from nmtkit.search.length_policy import LengthPolicy

_ALIGN_CHUNK = 1000  # pairs read, sorted by length and batched at a time


@dataclass(frozen=True, kw_only=True)
class WordAlignment:
    """One sentence pair's attention gathered to words, and the links extracted from it."""

    src_words: list[str]
    tgt_words: list[str]
    weights: np.ndarray  # [T_words, S_words], rows sum to 1
    links: list[Link]


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


def method_names() -> list[str]:
    """Every ``--method``: the one-direction extraction methods, then the bidirectional ones."""
    return [*EXTRACTORS, *SYMMETRIZERS]


def is_bidirectional(method: str) -> bool:
    """Whether ``method`` combines two directions' links (and so needs a reverse model).

    Raises:
        ConfigError: no method has that name.
    """
    if method not in EXTRACTORS and method not in SYMMETRIZERS:
        raise unknown_name("alignment method", method, method_names())
    return method in SYMMETRIZERS


def align_corpus(
    loaded: Any,
    src_lines: Iterable[str],
    tgt_lines: Iterable[str],
    *,
    method: str = "argmax",
    threshold: float = 0.5,
    batch_size: int = 64,
    lengths: LengthPolicy | None = None,
    precision: str = "fp32",
    ensemble_with: Sequence[Any] = (),
) -> Iterator[WordAlignment]:
    """Force-decode each target with the model and turn its attention into word alignments.

    Pairs are read in chunks, sorted by length and force-decoded in batches under the token
    budget of ``lengths`` (the longer side counts); a side longer than its
    ``max_source_len`` is cut to it, with a warning naming the pair. Alignments come back in
    input order.

    Args:
        loaded: a :class:`nmtkit.checkpoint.LoadedModel`.
        src_lines, tgt_lines: raw sentence pairs, as many of each.
        method: a one-direction extraction method (see ``nmtkit.alignment.links.EXTRACTORS``).
        threshold: the least weight a link needs, for ``threshold``.
        batch_size: the most pairs in a batch.
        lengths: the length policy; :class:`~nmtkit.search.length_policy.LengthPolicy`'s defaults
            when None.
        precision: of the matrix products (:func:`nmtkit.runtime.resolve_precision`); ``int8``
            gives the model's decoder int8 weights in place
            (:func:`nmtkit.models.quantization.quantize_int8`).
        ensemble_with: more models (of ``loaded``'s vocabulary, checked by the caller) whose
            attention is averaged with ``loaded``'s (:meth:`nmtkit.search.ensemble.Ensemble.
            force_decode`); the text pipelines are ``loaded``'s.

    Raises:
        ConfigError: an unknown method or precision, a threshold outside (0, 1], or ``int8``
            without torchao.
        DataError: the two sides differ in length.
    """
    import torch

    from nmtkit.data.batching import collate
    from nmtkit.models.quantization import quantize_int8
    from nmtkit.runtime import autocast, resolve_precision
    from nmtkit.search.ensemble import Ensemble
    from nmtkit.search.length_policy import LengthPolicy

    extract = extractor(method)
    policy = lengths or LengthPolicy()
    pairs = iter(zip(src_lines, tgt_lines, strict=True))
    models = [member.model for member in (loaded, *ensemble_with)]
    model = (Ensemble(models) if ensemble_with else loaded.model).eval()
    device = next(model.parameters()).device
    precision = resolve_precision(precision, device)
    if precision == "int8":
        for member in models:
            quantize_int8(member)
    offset = 0
    while chunk := list(itertools.islice(pairs, _ALIGN_CHUNK)):
        src_ids, tgt_ids = [], []
        for number, (src, tgt) in enumerate(chunk, start=offset + 1):
            src_ids.append(policy.cut(loaded.src_text.encode(src), what=f"pair {number} source"))
            tgt_ids.append(policy.cut(loaded.tgt_text.encode(tgt), what=f"pair {number} target"))
        found: list[WordAlignment | None] = [None] * len(chunk)
        lengths_of = ([len(ids) for ids in src_ids], [len(ids) for ids in tgt_ids])
        for rows in policy.batches(*lengths_of, max_sentences=batch_size):
            with torch.inference_mode(), autocast(precision, device):
                batch = collate([src_ids[i] for i in rows], [tgt_ids[i] for i in rows], rows)
                weights = model.force_decode(batch.to(device)).cpu()  # [b, T+1, S+1]
            for row, i in enumerate(rows):
                src_pieces = loaded.src_text.id_to_piece(src_ids[i])
                tgt_pieces = loaded.tgt_text.id_to_piece(tgt_ids[i])
                found[i] = _word_alignment(weights[row], src_pieces, tgt_pieces, extract, threshold)
            del weights
        for item in found:
            assert item is not None
            yield item
        offset += len(chunk)


def _word_alignment(
    weights: Any,
    src_pieces: list[str],
    tgt_pieces: list[str],
    extract: Extractor,
    threshold: float,
) -> WordAlignment:
    """One pair's word weights and links from its attention over pieces [>=T, >=S]."""
    from nmtkit.data.text import words

    src_words, tgt_words = words(src_pieces), words(tgt_pieces)
    if not src_pieces or not tgt_pieces:
        empty = np.zeros((len(tgt_words), len(src_words)))
        return WordAlignment(src_words=src_words, tgt_words=tgt_words, weights=empty, links=[])
    merged = piece_weights_to_words(weights, src_pieces, tgt_pieces)
    links = extract(merged, threshold)
    return WordAlignment(src_words=src_words, tgt_words=tgt_words, weights=merged, links=links)


def symmetrize_corpus(
    forward: Iterable[WordAlignment], backward: Iterable[WordAlignment], *, method: str
) -> Iterator[WordAlignment]:
    """Combine source->target alignments with target->source ones of the same pairs.

    ``backward`` aligns each pair the other way round (its source is the target); its links
    are transposed before ``method`` combines them. Each item keeps the forward weights.

    Raises:
        ConfigError: ``method`` is not a symmetrization method.
        DataError: the two sides differ in length, or split a pair into different words.
    """
    combine = symmetrizer(method)
    for number, (fwd, bwd) in enumerate(zip(forward, backward, strict=True), start=1):
        if (len(bwd.tgt_words), len(bwd.src_words)) != (len(fwd.src_words), len(fwd.tgt_words)):
            raise DataError(
                f"sentence pair {number}: the two models split it into different words",
                hint="preprocess both directions with the same text settings",
            )
        yield replace(fwd, links=combine(fwd.links, [(i, j) for j, i in bwd.links]))


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
    num_src, num_tgt = count_lines(src_path), count_lines(tgt_path)
    if num_src != num_tgt:
        raise DataError(f"{src_path} has {num_src} lines but {tgt_path} has {num_tgt}")
    if gold is not None and (num_gold := count_lines(gold.path)) != num_src:
        raise DataError(f"{src_path} has {num_src} lines but gold {gold.path} has {num_gold}")


def _check_directions(forward: Any, reverse: Any, reverse_path: str | Path) -> None:
    """Require the reverse model to translate the other way round."""
    want = (forward.vocab.tgt_lang, forward.vocab.src_lang)
    got = (reverse.vocab.src_lang, reverse.vocab.tgt_lang)
    if got != want:
        raise ConfigError(
            f"--reverse-model {reverse_path} translates {got[0]}->{got[1]}, "
            f"expected {want[0]}->{want[1]}"
        )


def require_alignment(loaded: Any, model_path: str | Path) -> None:
    """Require a model whose attention weights are an alignment (``AttentionScorer.aligns``).

    Raises:
        ConfigError: the model's attention does not align (e.g. RNNencdec's fixed context).
    """
    from nmtkit import registry

    name = loaded.config.model.attention.name
    if not registry.get("attention", name).aligns:
        raise ConfigError(
            f"model {model_path} has attention {name!r}, whose weights are not an alignment",
            hint="align with a model that attends, e.g. one trained with attention 'additive'",
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
) -> Iterator[WordAlignment]:
    """Load the model or ensemble (and the reverse model) and align the pairs with
    ``method``."""
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
    )
    back_lines, forth_lines = _lines(tgt_path, limit), _lines(src_path, limit)
    other_way = align_corpus(
        reverse,
        back_lines,
        forth_lines,
        batch_size=batch_size,
        lengths=lengths,
        precision=precision,
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

    from nmtkit.runtime import resolve_precision

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
    resolve_precision(precision, device)  # an unknown precision fails before any work
    _check_lines(src_path, tgt_path, gold)
    if output.path is not None:
        check_writable(output.path)  # before the model loads, so that no work is lost
    if output.plot_dir is not None:
        check_writable_dir(output.plot_dir)
    gold_links = gold.read()[:limit] if gold is not None else []
    if threads:
        torch.set_num_threads(threads)
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
    return sys.stdout if path == "-" else stack.enter_context(atomic_write(path))
