"""Tests for nmtkit.data.dedup: 8-byte pair digests, the set that remembers them, and the
bucketed finder of repeats that a corpus of any size goes through."""

from __future__ import annotations

import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nmtkit.data.dedup import DigestSet, DuplicateFinder, DuplicateMask, pair_digests


def test_pair_digests_are_8_bytes_and_tell_the_sides_apart() -> None:
    digests = pair_digests(["a b", "a", "a b"], ["c", "b c", "c"])
    assert digests.dtype == np.uint64 and digests.shape == (3,)
    assert digests[0] == digests[2] != digests[1]  # "a b" + "c" is not "a" + "b c"


@given(st.lists(st.lists(st.integers(0, 40), max_size=30), max_size=12))
def test_add_new_marks_first_occurrences_as_a_python_set_does(chunks: list[list[int]]) -> None:
    seen = DigestSet(recent_max=8)  # merges into the sorted array many times
    oracle: set[int] = set()
    for chunk in chunks:
        expected = []
        for digest in chunk:
            expected.append(digest not in oracle)
            oracle.add(digest)
        assert seen.add_new(np.array(chunk, dtype=np.uint64)) == expected
    assert len(seen) == len(oracle)


def test_digests_above_2_to_the_63_survive_a_merge() -> None:
    seen = DigestSet(recent_max=2)
    big = np.array([2**64 - 1, 2**63, 5], dtype=np.uint64)
    assert seen.add_new(big) == [True, True, True]
    assert seen.add_new(big[::-1]) == [False, False, False]


def _first_occurrences(chunks: list[list[int]]) -> list[bool]:
    seen: set[int] = set()
    repeated = []
    for digest in (d for chunk in chunks for d in chunk):
        repeated.append(digest in seen)
        seen.add(digest)
    return repeated


_digest_chunks = st.lists(
    st.lists(st.sampled_from([0, 1, 7, 2**63, 2**64 - 1, 2**62 + 5, 12345]), max_size=30),
    max_size=8,
)


@given(_digest_chunks, st.integers(1, 4))
def test_duplicate_finder_marks_the_repeats_a_python_set_finds(
    chunks: list[list[int]], bucket_pairs: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        expected = _first_occurrences(chunks)
        # 40 expected pairs, 1 to 4 a bucket: 16 to 64 buckets, told apart by the top bits
        with DuplicateFinder(Path(folder), 40, bucket_pairs=bucket_pairs) as finder:
            for chunk in chunks:
                finder.add(np.array(chunk, dtype=np.uint64))
            repeats = finder.duplicates()
        assert list(Path(folder).iterdir()) == []
        assert repeats[0 : len(expected)].tolist() == expected
        assert repeats.count == sum(expected)
        lines = [f"pair {i}" for i in range(len(expected))]
        unique = [line for line, repeat in zip(lines, expected, strict=True) if not repeat]
        assert list(repeats.unique(lines, chunk=3)) == unique


@given(st.lists(st.booleans(), max_size=40), st.data())
def test_duplicate_mask_slices_start_anywhere_in_a_byte(
    flags: list[bool], data: st.DataObject
) -> None:
    bits = np.packbits(np.array(flags, dtype=bool), bitorder="little")
    mask = DuplicateMask(bits, len(flags), count=sum(flags))
    start = data.draw(st.integers(0, len(flags)))
    stop = data.draw(st.integers(start, len(flags) + 5))
    assert mask[start:stop].tolist() == flags[start:stop]


def test_duplicate_finder_holds_a_bucket_not_the_corpus(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    tracemalloc.start()
    try:
        with DuplicateFinder(tmp_path, 400_000, bucket_pairs=20_000) as finder:
            for _ in range(40):  # 400,000 distinct pairs: 6.4 MB of digests and indices
                finder.add(rng.integers(0, 2**63, size=10_000, dtype=np.uint64))
            repeats = finder.duplicates()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert repeats.count == 0
    assert peak < 2_000_000  # one bucket of about 12,500 pairs, the chunks and 50 kB of bits


def test_duplicate_finder_deletes_its_buckets_after_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), DuplicateFinder(tmp_path, 100, bucket_pairs=10) as finder:
        finder.add(np.arange(50, dtype=np.uint64))
        raise RuntimeError("worker died")
    assert list(tmp_path.iterdir()) == []
