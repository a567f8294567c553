"""Symmetrization heuristics (Koehn et al., 2003; the Moses pseudo-code) on hand-worked grids."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nmtkit.alignment.symmetrize import SYMMETRIZERS, symmetrize_files, symmetrizer
from nmtkit.errors import ConfigError, DataError

Links = set[tuple[int, int]]

# A 4 x 5 grid, links written (source word i, target word j); '=' both, 'f' forward, 'b' backward:
#
#        j: 0  1  2  3  4
#   i = 0:  =  .  .  b  .     (0, 0) in both; (0, 3) backward only
#   i = 1:  .  f  .  f  .     (1, 1) diagonal to (0, 0); (1, 3) apart from everything
#   i = 2:  .  .  .  .  .
#   i = 3:  .  .  .  .  b     (3, 4) apart, both its words unaligned
#
# grow-diag adds (1, 1). FINAL(forward) then adds (1, 3) (target 3 unaligned), after which
# FINAL(backward) skips (0, 3) (both words aligned) and adds (3, 4). FINAL-AND adds only (3, 4).
_FORWARD = {(0, 0), (1, 1), (1, 3)}
_BACKWARD = {(0, 0), (0, 3), (3, 4)}


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("intersection", [(0, 0)]),
        ("union", [(0, 0), (0, 3), (1, 1), (1, 3), (3, 4)]),
        ("grow-diag", [(0, 0), (1, 1)]),
        ("grow-diag-final", [(0, 0), (1, 1), (1, 3), (3, 4)]),
        ("grow-diag-final-and", [(0, 0), (1, 1), (3, 4)]),
    ],
)
def test_hand_worked_grid(method: str, expected: list[tuple[int, int]]) -> None:
    assert symmetrizer(method)(_FORWARD, _BACKWARD) == expected


def test_grow_diag_final_adds_the_forward_links_first() -> None:
    # Swapped, FINAL adds (0, 3) first, and then (1, 3) has both words aligned.
    assert symmetrizer("grow-diag-final")(_BACKWARD, _FORWARD) == [(0, 0), (0, 3), (1, 1), (3, 4)]


@pytest.mark.parametrize("method", ["grow-diag", "grow-diag-final", "grow-diag-final-and"])
def test_growing_follows_a_chain_added_in_the_same_sweep(method: str) -> None:
    # Only (0, 0) is in both; each diagonal point is next to the one added before it.
    forward = {(0, 0), (1, 1), (3, 3)}
    backward = {(0, 0), (2, 2), (4, 4)}
    expected = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]
    assert symmetrizer(method)(forward, backward) == expected


@pytest.mark.parametrize("method", ["grow-diag", "grow-diag-final", "grow-diag-final-and"])
def test_a_neighbour_whose_words_are_both_aligned_is_not_added(method: str) -> None:
    # (0, 1) and (1, 0) touch the intersection, but both their words are aligned already.
    forward = {(0, 0), (1, 1), (0, 1)}
    backward = {(0, 0), (1, 1), (1, 0)}
    assert symmetrizer(method)(forward, backward) == [(0, 0), (1, 1)]


def test_grow_diag_keeps_a_one_to_many_link_next_to_the_intersection() -> None:
    # (0, 1): source 0 is aligned, target 1 is not, and it is the right-hand neighbour of (0, 0).
    assert symmetrizer("grow-diag")({(0, 0), (0, 1)}, {(0, 0)}) == [(0, 0), (0, 1)]


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("intersection", []),
        ("union", [(0, 0), (0, 2)]),
        ("grow-diag", []),
        ("grow-diag-final", [(0, 0), (0, 2)]),
        ("grow-diag-final-and", [(0, 0)]),
    ],
)
def test_one_direction_empty(method: str, expected: list[tuple[int, int]]) -> None:
    assert symmetrizer(method)({(0, 0), (0, 2)}, set()) == expected


@pytest.mark.parametrize("method", sorted(SYMMETRIZERS))
def test_nothing_from_nothing(method: str) -> None:
    assert symmetrizer(method)([], []) == []


def test_unknown_method_is_a_config_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match="did you mean 'grow-diag-final'"):
        symmetrizer("grow-diag-finale")


_SIDE = st.sets(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=20)


@given(_SIDE, _SIDE)
def test_every_method_lies_between_intersection_and_union(forward: Links, backward: Links) -> None:
    low, high = forward & backward, forward | backward
    grown = set(symmetrizer("grow-diag")(forward, backward))
    for method in SYMMETRIZERS:
        links = set(symmetrizer(method)(forward, backward))
        assert low <= links <= high, method
    for method in ("grow-diag-final", "grow-diag-final-and"):
        assert grown <= set(symmetrizer(method)(forward, backward))


@given(_SIDE, _SIDE)
def test_grow_diag_final_aligns_every_word_that_either_direction_aligns(
    forward: Links, backward: Links
) -> None:
    links = symmetrizer("grow-diag-final")(forward, backward)
    union = forward | backward
    assert {i for i, _ in links} == {i for i, _ in union}
    assert {j for _, j in links} == {j for _, j in union}


@given(_SIDE, _SIDE)
def test_intersection_and_union_ignore_the_order_of_directions(
    forward: Links, backward: Links
) -> None:
    for method in ("intersection", "union"):
        assert symmetrizer(method)(forward, backward) == symmetrizer(method)(backward, forward)


def test_symmetrize_files_combines_two_source_target_files_line_by_line(tmp_path: Path) -> None:
    forward = tmp_path / "fwd.align"
    backward = tmp_path / "rev.align"
    forward.write_text("0-0 1-1 1-3\n0-0\n\n", encoding="utf-8")
    backward.write_text("0-0 0-3 3-4\n0-1\n\n", encoding="utf-8")
    out = tmp_path / "gdfa.align"
    assert symmetrize_files(forward, backward, method="grow-diag-final-and", output=out) == 3
    assert out.read_text("utf-8") == "0-0 1-1 3-4\n0-0\n\n"


def test_symmetrize_files_names_both_files_when_line_counts_differ(tmp_path: Path) -> None:
    forward = tmp_path / "fwd.align"
    backward = tmp_path / "rev.align"
    forward.write_text("0-0\n", encoding="utf-8")
    backward.write_text("0-0\n1-1\n", encoding="utf-8")
    out = tmp_path / "out.align"
    with pytest.raises(DataError, match=r"fwd\.align has 1 lines but .*rev\.align has 2"):
        symmetrize_files(forward, backward, method="intersection", output=out)
    assert not out.exists()
