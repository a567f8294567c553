"""Pharaoh alignment files: 'i-j' sure links and 'ipj' possible links, one sentence pair a line."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from nmtkit.alignment.links import Link
from nmtkit.errors import DataError
from nmtkit.files import display_name, read_lines

GoldLinks = tuple[set[Link], set[Link]]
"""One sentence pair's gold: (sure S, possible P), with S a subset of P."""

_PHARAOH_LINK = re.compile(r"([0-9]+)([-p])([0-9]+)")


def format_pharaoh(links: Iterable[Link]) -> str:
    """Write links as a Pharaoh line, 'i-j' pairs sorted: '0-0 1-2 2-1'."""
    return " ".join(f"{i}-{j}" for i, j in sorted(set(links)))


def parse_pharaoh(
    line: str,
    *,
    where: str | None = None,
    one_indexed: bool = False,
    reverse: bool = False,
) -> GoldLinks:
    """Read a Pharaoh line into (sure, possible) link sets, with sure a subset of possible.

    'i-j' is a sure link (so also possible) and 'ipj' a possible one only.

    Args:
        where: ``path:line`` named in errors.
        one_indexed: the file counts words from 1 (Och & Ney's Hansards gold); return 0-based.
        reverse: the file writes 'j-i' (target first); return (i, j).

    Raises:
        DataError: a token is not 'i-j' or 'ipj', or is 0 in a one-indexed file.
    """
    sure: set[Link] = set()
    possible: set[Link] = set()
    offset = 1 if one_indexed else 0
    for token in line.split():
        match = _PHARAOH_LINK.fullmatch(token)
        if match is None:
            raise DataError(
                f"malformed alignment link {token!r}",
                where=where,
                hint="expected 'i-j' (sure) or 'ipj' (possible), e.g. '0-1 2p3'",
            )
        i, j = int(match[1]) - offset, int(match[3]) - offset
        if min(i, j) < 0:
            raise DataError(f"alignment link {token!r} has a 0 in a one-indexed file", where=where)
        link = (j, i) if reverse else (i, j)
        possible.add(link)
        if match[2] == "-":
            sure.add(link)
    return sure, possible


def read_pharaoh(
    path: str | Path, *, one_indexed: bool = False, reverse: bool = False
) -> list[GoldLinks]:
    """Read a Pharaoh file ('-' for stdin): one (sure, possible) pair per line, see parse_pharaoh.

    Raises:
        DataError: the file is unreadable or a line is malformed (naming file and line).
    """
    name = display_name(path)
    return [
        parse_pharaoh(line or "", where=f"{name}:{i}", one_indexed=one_indexed, reverse=reverse)
        for i, line in enumerate(read_lines(path), start=1)
    ]
