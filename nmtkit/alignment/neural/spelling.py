"""How alike two words are spelled: the Dice coefficient of their character trigrams (with '<'
and '>' marking the word's ends), for the word pairs that share a sentence pair.

Cognates, names and numbers ('division' / 'division', 'moratorium' / 'moratoire', '1975')
are most of the links of rare words that an aligner learns from one or two sentences; the
lexicon adds a learned multiple of this score to its logits (``AlignerConfig.spelling``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_DICE = 0.3  # below this, a shared trigram or two is chance ('<de', 'es>')


def _trigrams(word: str) -> frozenset[str]:
    marked = f"<{word}>"
    return frozenset(marked[start : start + 3] for start in range(len(marked) - 2))


def dice(a: str, b: str) -> float:
    """2 |T(a) ∩ T(b)| / (|T(a)| + |T(b)|) over character trigrams; 1.0 for equal words."""
    ta, tb = _trigrams(a), _trigrams(b)
    return 2 * len(ta & tb) / (len(ta) + len(tb))


def cooccurring_similarity(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    src_words: Sequence[str],
    tgt_words: Sequence[str],
    *,
    min_dice: float = MIN_DICE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Dice score of every (source word, target word) that share a sentence pair, where it
    is at least ``min_dice``.

    Args:
        pairs: sentence pairs as word ids of ``src_words`` and ``tgt_words``.

    Returns:
        Source ids, target ids and scores, three arrays of one length.
    """
    num_tgt = len(tgt_words)
    cells = [
        (
            np.unique(np.asarray(src))[:, None] * num_tgt + np.unique(np.asarray(tgt))[None, :]
        ).ravel()
        for src, tgt in pairs
        if len(src) and len(tgt)
    ]
    if not cells:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    keys = np.unique(np.concatenate(cells))
    src_ids, tgt_ids = keys // num_tgt, keys % num_tgt
    src_grams: dict[int, frozenset[str]] = {}
    tgt_grams: dict[int, frozenset[str]] = {}
    kept_src, kept_tgt, scores = [], [], []
    for s, t in zip(src_ids.tolist(), tgt_ids.tolist(), strict=True):
        a = src_grams.get(s) or src_grams.setdefault(s, _trigrams(src_words[s]))
        b = tgt_grams.get(t) or tgt_grams.setdefault(t, _trigrams(tgt_words[t]))
        common = len(a & b)
        if common:
            score = 2 * common / (len(a) + len(b))
            if score >= min_dice:
                kept_src.append(s)
                kept_tgt.append(t)
                scores.append(score)
    return (
        np.asarray(kept_src, dtype=np.int64),
        np.asarray(kept_tgt, dtype=np.int64),
        np.asarray(scores, dtype=np.float32),
    )
