"""Tests for nmtkit.data.dedup: 8-byte pair digests and the set that remembers them."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from nmtkit.data.dedup import DigestSet, pair_digests


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
