"""Symmetrization: combine source->target and target->source links into one alignment.

The heuristics of Koehn, Och and Marcu (2003) as the Moses manual writes them (training step 3,
"grow-diag-final"): start from the intersection, grow into the union along neighbouring points,
then add the remaining links of each direction whose words are still unaligned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from nmtkit.alignment.links import Link, pick
from nmtkit.alignment.pharaoh import format_pharaoh, read_pharaoh
from nmtkit.files import check_line_counts
from nmtkit.outputs import atomic_write

Symmetrizer = Callable[[Iterable[Link], Iterable[Link]], list[Link]]
"""Links from src->tgt links and tgt->src links, both written (i, j) = (src word, tgt word)."""

# The Moses order: left, up, right, down, then the four diagonals.
_NEIGHBORS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


class _Alignment:
    """A growing set of links that knows which source and target words are aligned."""

    def __init__(self, links: Iterable[Link]) -> None:
        self.links: set[Link] = set()
        self.src_aligned: set[int] = set()
        self.tgt_aligned: set[int] = set()
        for link in links:
            self.add(link)

    def add(self, link: Link) -> None:
        self.links.add(link)
        self.src_aligned.add(link[0])
        self.tgt_aligned.add(link[1])

    def either_unaligned(self, link: Link) -> bool:
        return link[0] not in self.src_aligned or link[1] not in self.tgt_aligned

    def both_unaligned(self, link: Link) -> bool:
        return link[0] not in self.src_aligned and link[1] not in self.tgt_aligned


def _grow_diag(alignment: _Alignment, union: set[Link]) -> None:
    """GROW-DIAG: add union points next to aligned points that align an unaligned word.

    Points are visited source word by source word, then target word, and a point added
    during a sweep counts at once, as in the Moses pseudo-code; sweeps repeat until none adds.
    """
    if not union:
        return
    num_src = 1 + max(i for i, _ in union)
    num_tgt = 1 + max(j for _, j in union)
    added = True
    while added:
        added = False
        for i in range(num_src):
            for j in range(num_tgt):
                if (i, j) not in alignment.links:
                    continue
                for di, dj in _NEIGHBORS:
                    point = (i + di, j + dj)
                    if point in union and alignment.either_unaligned(point):
                        alignment.add(point)
                        added = True


def _final(alignment: _Alignment, links: Iterable[Link], unaligned: Callable[[Link], bool]) -> None:
    """FINAL(a) / FINAL-AND(a): add each link of ``a`` whose words pass ``unaligned``."""
    for point in sorted(set(links)):
        if unaligned(point):
            alignment.add(point)


def intersection(src_tgt: Iterable[Link], tgt_src: Iterable[Link]) -> list[Link]:
    """Links found in both directions: high precision."""
    return sorted(set(src_tgt) & set(tgt_src))


def union(src_tgt: Iterable[Link], tgt_src: Iterable[Link]) -> list[Link]:
    """Links found in either direction: high recall."""
    return sorted(set(src_tgt) | set(tgt_src))


def grow_diag(src_tgt: Iterable[Link], tgt_src: Iterable[Link]) -> list[Link]:
    """The intersection grown along neighbouring union points (diagonals included)."""
    forward, backward = set(src_tgt), set(tgt_src)
    alignment = _Alignment(forward & backward)
    _grow_diag(alignment, forward | backward)
    return sorted(alignment.links)


def grow_diag_final(src_tgt: Iterable[Link], tgt_src: Iterable[Link]) -> list[Link]:
    """grow-diag, then each direction's links that have a still-unaligned word."""
    forward, backward = set(src_tgt), set(tgt_src)
    alignment = _Alignment(forward & backward)
    _grow_diag(alignment, forward | backward)
    _final(alignment, forward, alignment.either_unaligned)
    _final(alignment, backward, alignment.either_unaligned)
    return sorted(alignment.links)


def grow_diag_final_and(src_tgt: Iterable[Link], tgt_src: Iterable[Link]) -> list[Link]:
    """grow-diag, then each direction's links whose two words are both still unaligned."""
    forward, backward = set(src_tgt), set(tgt_src)
    alignment = _Alignment(forward & backward)
    _grow_diag(alignment, forward | backward)
    _final(alignment, forward, alignment.both_unaligned)
    _final(alignment, backward, alignment.both_unaligned)
    return sorted(alignment.links)


SYMMETRIZERS: dict[str, Symmetrizer] = {
    "intersection": intersection,
    "union": union,
    "grow-diag": grow_diag,
    "grow-diag-final": grow_diag_final,
    "grow-diag-final-and": grow_diag_final_and,
}
"""Bidirectional methods, by name (``nmtkit align --method``, with ``--reverse-model``)."""


def symmetrizer(name: str) -> Symmetrizer:
    """Return the symmetrization method called ``name``.

    Raises:
        ConfigError: no symmetrization method has that name.
    """
    return pick(SYMMETRIZERS, name, what="symmetrization")


def symmetrize_files(
    src_tgt_path: str | Path, tgt_src_path: str | Path, *, method: str, output: str | Path
) -> int:
    """Combine two Pharaoh files of 0-based source-target links and write the result atomically.

    Both files write source word first, as aligners such as eflomal and fast_align write their
    reverse runs; ``tgt_src_path`` holds the target->source direction's links.

    Returns:
        The number of sentence pairs.

    Raises:
        ConfigError: an unknown method.
        DataError: a file is unreadable or malformed, or the line counts differ.
    """
    combine = symmetrizer(method)
    forward = [links for _, links in read_pharaoh(src_tgt_path)]
    backward = [links for _, links in read_pharaoh(tgt_src_path)]
    check_line_counts(src_tgt_path, len(forward), tgt_src_path, len(backward))
    with atomic_write(output) as stream:
        for fwd, bwd in zip(forward, backward, strict=True):
            stream.write(format_pharaoh(combine(fwd, bwd)) + "\n")
    return len(forward)
