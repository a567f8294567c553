"""Attention over subword pieces as word weights, and the named methods that turn them into links.

A link is a pair (i, j) of a 0-based source word i and a 0-based target word j.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from nmtkit.errors import ConfigError, unknown_name

Link = tuple[int, int]

Extractor = Callable[[np.ndarray, float], list[Link]]
"""Links from word weights [T_words, S_words] and a threshold (used by ``threshold`` only)."""


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


def piece_weights_to_words(
    weights: Any, src_pieces: Sequence[str], tgt_pieces: Sequence[str]
) -> np.ndarray:
    """Word-level weights [T_words, S_words] from attention over pieces (a tensor [>=T, >=S]).

    The EOS step and the EOS position (and any padding) are dropped; rows are renormalized.
    With no source or no target pieces the matrix is all zeros, of the words there are.
    """
    from nmtkit.data.text import word_index, words

    if not src_pieces or not tgt_pieces:
        return np.zeros((len(words(tgt_pieces)), len(words(src_pieces))))
    matrix = weights[: len(tgt_pieces), : len(src_pieces)].double().numpy()
    return merge_to_words(
        matrix, src_word_index=word_index(src_pieces), tgt_word_index=word_index(tgt_pieces)
    )


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


def _argmax(word_weights: np.ndarray, threshold: float) -> list[Link]:
    return argmax_links(word_weights)


Method = TypeVar("Method")

EXTRACTORS: dict[str, Extractor] = {"argmax": _argmax, "threshold": threshold_links}
"""One direction's link extraction methods, by name (``nmtkit align --method``)."""


def pick(table: Mapping[str, Method], name: str, *, what: str) -> Method:
    """``table[name]``, or a ConfigError naming the closest method or listing them all."""
    if name not in table:
        raise unknown_name(f"{what} method", name, table)
    return table[name]


def extractor(name: str) -> Extractor:
    """Return the extraction method called ``name``.

    Raises:
        ConfigError: no extraction method has that name.
    """
    return pick(EXTRACTORS, name, what="extraction")
