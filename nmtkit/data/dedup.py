"""Exact-duplicate detection for training pairs by 64-bit BLAKE2b digests, never the lines:
in memory (about 8 bytes a pair, for pairs checked one at a time), or on disk in buckets
sorted one at a time (an eighth of a byte a pair in memory, for a corpus)."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

_RECENT_MAX = 1 << 20  # digests held in a Python set before they join the sorted array
_BUCKET_PAIRS = 1 << 18  # pairs a bucket of DuplicateFinder aims at (4 MB of digests and indices)
_MAX_BUCKETS = 256  # files open at once
_ENTRY = np.dtype([("digest", "<u8"), ("index", "<i8")])


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


class DuplicateFinder:
    """Find the pairs that repeat an earlier one in a corpus, in memory bounded up to 67 million
    pairs (256 buckets of 260,000; beyond, the buckets grow) but for one bit a pair.

    Each pair's digest goes to disk with the pair's index, into one of up to 256 buckets chosen
    by its top bits (equal pairs meet in one bucket), each meant to hold 130,000 to 260,000
    pairs; then each bucket alone is sorted by digest (stably, so the first of equal digests is the
    earliest pair) and its repeats are marked in a bit array: memory holds one bucket (16
    bytes a pair of it) and an eighth of a byte a pair of the corpus.

    Args:
        folder: where the bucket files go (deleted by :meth:`duplicates`).
        num_pairs: about how many pairs will come, to size the buckets.
        bucket_pairs: pairs a bucket aims at (tests make it small).
    """

    def __init__(self, folder: Path, num_pairs: int, *, bucket_pairs: int = _BUCKET_PAIRS) -> None:
        wanted = min(max(num_pairs // bucket_pairs, 1), _MAX_BUCKETS)
        self._bits = max(wanted - 1, 0).bit_length()  # 2**bits buckets, at least ``wanted``
        self._paths = [folder / f"digests.{k}" for k in range(1 << self._bits)]
        self._streams = [open(path, "wb") for path in self._paths]  # noqa: SIM115
        self.num_pairs = 0

    def __enter__(self) -> DuplicateFinder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def add(self, digests: np.ndarray) -> None:
        """Add the digests [n] of the next pairs, in corpus order."""
        entries = np.empty(len(digests), dtype=_ENTRY)
        entries["digest"] = digests
        entries["index"] = np.arange(self.num_pairs, self.num_pairs + len(digests))
        self.num_pairs += len(digests)
        buckets = (entries["digest"] >> np.uint64(64 - self._bits)) if self._bits else None
        if buckets is None:
            self._streams[0].write(entries.tobytes())
            return
        order = np.argsort(buckets, kind="stable")
        bounds = np.searchsorted(buckets[order], np.arange(len(self._streams) + 1))
        for bucket, stream in enumerate(self._streams):
            stream.write(entries[order[bounds[bucket] : bounds[bucket + 1]]].tobytes())

    def duplicates(self) -> DuplicateMask:
        """Return which of the pairs added repeat an earlier one; delete the bucket files."""
        bits = np.zeros(-(-self.num_pairs // 8), dtype=np.uint8)
        count = 0
        try:
            for stream in self._streams:
                stream.close()
            for path in self._paths:
                entries = np.fromfile(path, dtype=_ENTRY)
                path.unlink()
                by_digest = entries[np.argsort(entries["digest"], kind="stable")]
                digests, indices = by_digest["digest"], by_digest["index"]
                repeats = indices[1:][digests[1:] == digests[:-1]]
                count += repeats.size
                np.bitwise_or.at(bits, repeats >> 3, np.left_shift(1, repeats & 7).astype(np.uint8))
        finally:
            self.close()
        return DuplicateMask(bits, self.num_pairs, count=count)

    def close(self) -> None:
        """Close and delete the bucket files (after an error; :meth:`duplicates` does it)."""
        for stream, path in zip(self._streams, self._paths, strict=True):
            stream.close()
            path.unlink(missing_ok=True)


class DuplicateMask:
    """Which pairs of a corpus repeat an earlier one: one bit a pair.

    Args:
        bits: bit i (little-endian within its byte) says whether pair i repeats, uint8.
        count: how many bits are set.
    """

    def __init__(self, bits: np.ndarray, num_pairs: int, *, count: int) -> None:
        self._bits = bits
        self._num_pairs = num_pairs
        self.count = count

    def __getitem__(self, span: slice) -> np.ndarray:
        """Return whether pairs ``span.start`` to ``span.stop`` repeat an earlier one, bool."""
        start, stop = span.start or 0, min(span.stop, self._num_pairs)
        window = self._bits[start >> 3 : -(-stop // 8)]
        flags = np.unpackbits(window, bitorder="little").astype(bool)
        first = start & 7  # the bit of ``start`` in its byte
        return flags[first : first + stop - start]

    def unique(self, lines: Iterable[str], *, chunk: int = 1 << 16) -> Iterator[str]:
        """Yield the lines (one a pair, in corpus order) of the pairs that repeat no earlier
        one."""
        iterator = iter(lines)
        start = 0
        while block := list(itertools.islice(iterator, chunk)):
            repeated = self[start : start + len(block)]
            yield from (line for line, skip in zip(block, repeated, strict=True) if not skip)
            start += len(block)
