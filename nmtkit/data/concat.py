"""Concatenation augmentation: training examples made of two or more pairs joined end to end.

A model trained only on single sentences has never seen a target that goes on after a
sentence-final period; given two sentences on one line it stops after the first, or merges
them. Joining pairs during training (Kondo et al., 2021, "Sentence Concatenation Approach to
Data Augmentation for Neural Machine Translation"; Nguyen et al., 2021, "Data Augmentation by
Concatenation for Low-Resource Translation") teaches it to carry on and to cover the whole
source. Each epoch adds ``rate`` x (training pairs) joined examples to the pairs themselves,
drawn afresh from the epoch's own seed, so a run stays a pure function of (seed, epoch).

A joined example is a row of pair indices, -1 padded: ``[[4, 5, -1], [17, 18, 19]]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, kw_only=True, slots=True)
class ConcatPolicy:
    """Which joined examples an epoch gets.

    Attributes:
        rate: joined examples per training pair and epoch (0: none).
        max_parts: the most pairs joined into one example; each joins 2..max_parts, uniformly.
        mode: ``consecutive`` joins runs of neighbouring pairs (as sentences of a document
            follow each other), ``random`` joins pairs drawn anywhere in the corpus.

    The values are checked where they are configured (``train.concat_*`` in
    :class:`nmtkit.config.TrainConfig`).
    """

    rate: float = 0.0
    max_parts: int = 3
    mode: str = "consecutive"

    def joined(self, num_pairs: int, rng: np.random.Generator) -> np.ndarray:
        """The joined examples of one epoch over ``num_pairs`` pairs: [M, max_parts], -1 padded,
        M = round(rate x num_pairs); none when the corpus has fewer than 2 pairs."""
        count = round(self.rate * num_pairs)
        if count == 0 or num_pairs < 2:
            return np.empty((0, self.max_parts), dtype=np.int64)
        parts = np.minimum(rng.integers(2, self.max_parts + 1, size=count), num_pairs)  # [M]
        if self.mode == "consecutive":
            starts = rng.integers(0, num_pairs - parts + 1)  # [M], each run inside the corpus
            rows = starts[:, None] + np.arange(self.max_parts)[None, :]  # [M, max_parts]
        else:
            rows = rng.integers(0, num_pairs, size=(count, self.max_parts))
        rows[np.arange(self.max_parts)[None, :] >= parts[:, None]] = -1
        return rows.astype(np.int64)


def joined_lengths(lengths: np.ndarray, joined: np.ndarray) -> np.ndarray:
    """Length of each joined example, the sum of its pairs' lengths: [M] from [N] and [M, P]."""
    if len(joined) == 0:
        return np.empty(0, dtype=np.int64)
    picked = lengths[np.maximum(joined, 0)].astype(np.int64)  # [M, P]
    return np.where(joined >= 0, picked, 0).sum(axis=1)
