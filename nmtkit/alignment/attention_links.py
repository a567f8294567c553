"""Word alignments from a trained model's attention: each pair force-decoded, its attention
gathered to words and read off as links by an extraction method (``argmax``, ``threshold``), and
two directions' links combined by a bidirectional method (``grow-diag-final`` and others).

A link is a pair (i, j) of a 0-based source word i and a 0-based target word j.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nmtkit.alignment.links import (
    EXTRACTORS,
    Extractor,
    Link,
    extractor,
    piece_weights_to_words,
)
from nmtkit.alignment.symmetrize import SYMMETRIZERS, symmetrizer
from nmtkit.errors import ConfigError, DataError, unknown_name

if TYPE_CHECKING:  # torch is imported only when a model runs
    from nmtkit.search.length_policy import LengthPolicy

_ALIGN_CHUNK = 1000  # pairs read, sorted by length and batched at a time
# The bytes per (target x source) piece that aligning one pair holds: the decoder's [T, S] fp32
# weights and the float64 copies of the merge to words (measured: 1.9 GB at 5900 x 5900).
_BYTES_PER_CELL = 56
# A pair of more (target x source) pieces than this, whose word weights are not kept, is
# aligned alone, _BLOCK_STEPS target steps at a time, its links read off block by block: its
# memory grows with T + S, not T x S. Ordinary pairs keep the batched path (and its bytes).
_BLOCK_CELLS = 2**20  # about 1000 pieces a side: at most 56 MiB on the whole-matrix path
_BLOCK_STEPS = 256


@dataclass(frozen=True, kw_only=True)
class WordAlignment:
    """One sentence pair's attention gathered to words, and the links extracted from it."""

    src_words: list[str]
    tgt_words: list[str]
    weights: np.ndarray  # [T_words, S_words], rows sum to 1
    links: list[Link]


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
    keep_weights: bool = True,
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
        precision: of the matrix products (:func:`nmtkit.runtime.resolve_search_precision`);
            the models' weights are converted in place to what it needs
            (:func:`nmtkit.models.inference_weights.prepare_weights`).
        ensemble_with: more models (of ``loaded``'s vocabulary, checked by the caller) whose
            attention is averaged with ``loaded``'s (:meth:`nmtkit.search.ensemble.Ensemble.
            force_decode`); the text pipelines are ``loaded``'s.
        keep_weights: give each pair's word weights. When False, a pair of more than
            ``_BLOCK_CELLS`` piece cells is aligned in blocks of target steps, with memory linear
            in its length, and its ``weights`` are empty ([0, 0]); its links are the same.

    Raises:
        ConfigError: an unknown method or precision, a threshold outside (0, 1], or ``int8``
            without torchao.
        DataError: the two sides differ in length.
    """
    import torch

    from nmtkit.data.batching import collate
    from nmtkit.models.inference_weights import prepare_weights
    from nmtkit.runtime import autocast, check_line_memory, resolve_search_precision
    from nmtkit.search.ensemble import Ensemble
    from nmtkit.search.length_policy import LengthPolicy

    extract = extractor(method)
    policy = lengths or LengthPolicy()
    pairs = iter(zip(src_lines, tgt_lines, strict=True))
    models = [member.model for member in (loaded, *ensemble_with)]
    model = (Ensemble(models) if ensemble_with else loaded.model).eval()
    device = next(model.parameters()).device
    precision = resolve_search_precision(precision, device)
    for member in models:
        prepare_weights(member, precision)
    offset = 0
    while chunk := list(itertools.islice(pairs, _ALIGN_CHUNK)):
        src_ids, tgt_ids = [], []
        blocked: set[int] = set()
        for number, (src, tgt) in enumerate(chunk, start=offset + 1):
            src_ids.append(policy.cut(loaded.src_text.encode(src), what=f"pair {number} source"))
            tgt_ids.append(policy.cut(loaded.tgt_text.encode(tgt), what=f"pair {number} target"))
            cells = (len(src_ids[-1]) + 1) * (len(tgt_ids[-1]) + 1)  # EOS counts on both sides
            if not keep_weights and cells > _BLOCK_CELLS and src_ids[-1] and tgt_ids[-1]:
                blocked.add(number - offset - 1)
                continue
            check_line_memory(  # before the chunk's work
                cells * _BYTES_PER_CELL,
                what=f"pair {number}",
                size=f"{len(src_ids[-1])} source x {len(tgt_ids[-1])} target pieces",
                hint="bound both sides with --max-source-len, which cuts a longer side to it",
            )
        found: list[WordAlignment | None] = [None] * len(chunk)
        lengths_of = ([len(ids) for ids in src_ids], [len(ids) for ids in tgt_ids])
        for rows in policy.batches(*lengths_of, max_sentences=batch_size):
            rows = [i for i in rows if i not in blocked]
            if not rows:
                continue
            with torch.inference_mode(), autocast(precision, device):
                batch = collate([src_ids[i] for i in rows], [tgt_ids[i] for i in rows], rows)
                weights = model.force_decode(batch.to(device)).cpu()  # [b, T+1, S+1]
            for row, i in enumerate(rows):
                src_pieces = loaded.src_text.id_to_piece(src_ids[i])
                tgt_pieces = loaded.tgt_text.id_to_piece(tgt_ids[i])
                found[i] = _word_alignment(weights[row], src_pieces, tgt_pieces, extract, threshold)
            del weights
        for i in sorted(blocked):
            with torch.inference_mode(), autocast(precision, device):
                batch = collate([src_ids[i]], [tgt_ids[i]], [i]).to(device)
                blocks = (
                    block[0].cpu()  # [<=block, S+1]
                    for block in model.force_decode_blocks(batch, block=_BLOCK_STEPS)
                )
                found[i] = _blockwise_alignment(
                    blocks,
                    loaded.src_text.id_to_piece(src_ids[i]),
                    loaded.tgt_text.id_to_piece(tgt_ids[i]),
                    extract,
                    threshold,
                )
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
    merged = piece_weights_to_words(weights, src_pieces, tgt_pieces)
    links = extract(merged, threshold) if src_pieces and tgt_pieces else []
    return WordAlignment(src_words=src_words, tgt_words=tgt_words, weights=merged, links=links)


def _blockwise_alignment(
    blocks: Iterator[Any],
    src_pieces: list[str],
    tgt_pieces: list[str],
    extract: Extractor,
    threshold: float,
) -> WordAlignment:
    """One pair's links from its attention over pieces given as blocks of target steps
    [<=block, >=S], read off as soon as a target word's pieces are all in: the rows of a word
    that a block boundary splits wait for the next block. The weights are not kept ([0, 0]).
    """
    from nmtkit.data.text import word_index, words

    src_words, tgt_words = words(src_pieces), words(tgt_pieces)
    src_index, tgt_index = word_index(src_pieces), word_index(tgt_pieces)
    src_starts = np.flatnonzero(np.diff(src_index, prepend=-1))  # each word's first piece
    links: list[Link] = []
    pending: list[np.ndarray] = []  # rows [n, S_pieces] of words not yet complete
    start = 0  # the target piece of pending's first row
    for block in blocks:
        if start + sum(len(rows) for rows in pending) >= len(tgt_pieces):
            break  # the EOS step
        pending.append(block[:, : len(src_pieces)].double().numpy())
        rows = np.concatenate(pending)[: len(tgt_pieces) - start]  # [n, S_pieces]
        end = start + len(rows)  # complete words end before the first piece of end's word
        if end < len(tgt_pieces):
            end = tgt_index.index(tgt_index[end], start)
        if end > start:
            links += _links_of(
                rows[: end - start], src_starts, tgt_index[start:end], extract, threshold
            )
        pending, start = [rows[end - start :]], end
    empty = np.zeros((0, 0))
    return WordAlignment(
        src_words=src_words, tgt_words=tgt_words, weights=empty, links=sorted(links)
    )


def _links_of(
    rows: np.ndarray,
    src_starts: np.ndarray,
    tgt_index: Sequence[int],
    extract: Extractor,
    threshold: float,
) -> list[Link]:
    """The links of whole target words from their pieces' rows [n, S_pieces], gathered to
    words as :func:`~nmtkit.alignment.links.merge_to_words` does, but summing each source
    word's pieces by its first piece ``src_starts`` [S_words]: its one-hot [S_pieces, S_words]
    would be quadratic in a long line."""
    first = tgt_index[0]
    totals = rows.sum(axis=1, keepdims=True)  # [n, 1]
    rows = np.divide(rows, totals, out=np.zeros_like(rows), where=totals > 0)
    by_src_word = np.add.reduceat(rows, src_starts, axis=1)  # [n, S_words]
    local = np.asarray(tgt_index) - first  # [n]
    tgt_map = np.zeros((len(local), int(local[-1]) + 1))  # [n, words]
    tgt_map[np.arange(len(local)), local] = 1.0
    tgt_mean = tgt_map / np.maximum(tgt_map.sum(axis=0, keepdims=True), 1.0)
    merged = tgt_mean.T @ by_src_word  # [words, S_words]
    return [(i, j + first) for i, j in extract(merged, threshold)]


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
