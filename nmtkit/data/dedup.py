"""Exact-duplicate detection for training pairs in about 8 bytes a pair: 64-bit BLAKE2b digests
in a sorted array, never the lines themselves."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

_RECENT_MAX = 1 << 20  # digests held in a Python set before they join the sorted array


def pair_digests(src: Sequence[str], tgt: Sequence[str]) -> np.ndarray:
    """Return the 8-byte BLAKE2b digest of each prepared pair, as uint64 [n].

    Two different pairs share a digest with probability about n^2 / 2^65: once in some 20,000
    corpora of 40 million pairs, which would count one pair a duplicate.
    """
    raw = b"".join(
        hashlib.blake2b(f"{s}\n{t}".encode(), digest_size=8).digest()
        for s, t in zip(src, tgt, strict=True)
    )
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64)


class DigestSet:
    """The digests seen so far: a sorted uint64 array (8 bytes each) plus the most recent ones in a
    set of at most ``recent_max``, merged into the array when the set fills (each merge is linear,
    so a corpus of n pairs costs n / recent_max of them).

    Args:
        recent_max: how many digests the set holds before merging (tests make it small).
    """

    def __init__(self, *, recent_max: int = _RECENT_MAX) -> None:
        self._sorted = np.empty(0, dtype=np.uint64)
        self._recent: set[int] = set()
        self._recent_max = recent_max

    def __len__(self) -> int:
        return int(self._sorted.size) + len(self._recent)

    def add_new(self, digests: np.ndarray) -> list[bool]:
        """Add digests in order; return, for each, whether it is new: seen neither in an earlier
        call nor earlier in ``digests``."""
        digests = np.asarray(digests, dtype=np.uint64)
        found = np.zeros(digests.size, dtype=bool)
        if self._sorted.size:
            at = np.searchsorted(self._sorted, digests).clip(max=self._sorted.size - 1)
            found = self._sorted[at] == digests
        new = []
        for digest, old in zip(digests.tolist(), found.tolist(), strict=True):
            fresh = not old and digest not in self._recent
            if fresh:
                self._recent.add(digest)
            new.append(fresh)
        if len(self._recent) >= self._recent_max:
            self._merge()
        return new

    def _merge(self) -> None:
        recent = np.fromiter(self._recent, dtype=np.uint64, count=len(self._recent))
        recent.sort()
        self._sorted = np.insert(self._sorted, np.searchsorted(self._sorted, recent), recent)
        self._recent = set()
