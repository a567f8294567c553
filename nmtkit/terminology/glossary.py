"""Terms a translation must use: a glossary of ``source term<TAB>target term`` pairs, applied to
every sentence whose source holds the source term, and per-line constraints, target phrases
with no source term.

A source term is matched as the model reads its input: both the term and the sentence go
through the model's source pipeline (normalization, Moses tokenization, SentencePiece), and the
term must occur in the sentence as whole words (not starting or ending inside a run of letters
or digits), compared case-insensitively (``str.lower``: "Platform" at the start of a sentence
matches "platform"). A target term is
used exactly as written (through the target pipeline, so a lowercasing model lowercases it).
Where entries overlap in a sentence, the longest match wins ("platform 9" over "platform");
an entry whose target equals another matched entry's is applied once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from nmtkit.data.text import WORD_START, TextPipeline
from nmtkit.errors import DataError
from nmtkit.files import read_lines

CONSTRAINT_SEPARATOR = "\t"


@dataclass(frozen=True, slots=True)
class Term:
    """A target phrase a translation must contain, and the source term it translates (None for
    a bare constraint, whose place in the source is unknown).

    Attributes:
        where: the file and line it came from, for messages (e.g. ``glossary.tsv:12``).
    """

    target: str
    source: str | None = None
    where: str = ""


@dataclass(frozen=True, slots=True)
class SentenceTerm:
    """A term applied to one sentence: its source term's piece positions in the sentence
    (empty for a bare constraint), each occurrence a ``(start, end)`` span of source pieces."""

    term: Term
    source_spans: tuple[tuple[int, int], ...] = ()


def parse_constraints(line: str, *, where: str) -> tuple[Term, ...]:
    """The target phrases of one line of a constraints file, tab-separated ('' for none).

    Raises:
        DataError: an empty phrase (two tabs in a row, a leading or trailing tab, or a phrase
            of spaces), naming ``where``.
    """
    if not line.strip():
        return ()
    phrases = [phrase.strip() for phrase in line.split(CONSTRAINT_SEPARATOR)]
    if not all(phrases):
        raise DataError(
            "empty constraint",
            where=where,
            hint="separate a line's target phrases by one tab, with no tab at either end",
        )
    return tuple(Term(target=phrase, where=where) for phrase in phrases)


def read_constraints(path: str | Path) -> list[tuple[Term, ...]]:
    """Each line's target phrases from a constraints file (one line per input line, phrases
    tab-separated, an empty line for none; ``.gz`` read).

    Raises:
        DataError: the file is missing or not valid UTF-8, or a line has an empty phrase.
    """
    return [
        parse_constraints(line or "", where=f"{path}:{number}")
        for number, line in enumerate(read_lines(path), start=1)
    ]


def parse_glossary_line(line: str, *, where: str) -> Term | None:
    """One glossary entry from ``source term<TAB>target term``; None for a blank line or a
    comment (``#`` first).

    Raises:
        DataError: not exactly two tab-separated fields, or an empty one, naming ``where``.
    """
    if not line.strip() or line.lstrip().startswith("#"):
        return None
    fields = [field.strip() for field in line.split("\t")]
    if len(fields) != 2 or not all(fields):
        raise DataError(
            f"expected 'source term<TAB>target term', got {len(fields)} field(s)"
            if len(fields) != 2
            else "empty term",
            where=where,
            hint="one entry a line: the source term, a tab, the target term",
        )
    return Term(source=fields[0], target=fields[1], where=where)


def read_glossary(path: str | Path) -> tuple[Term, ...]:
    """The entries of a glossary TSV (``source term<TAB>target term`` a line; blank lines and
    ``#`` comments skipped; ``.gz`` read).

    Raises:
        DataError: the file is missing or not valid UTF-8, or a line is malformed.
    """
    entries = []
    for number, line in enumerate(read_lines(path), start=1):
        entry = parse_glossary_line(line or "", where=f"{path}:{number}")
        if entry is not None:
            entries.append(entry)
    return tuple(entries)


class Glossary:
    """Glossary entries with their source terms read as ``src_text`` reads a sentence.

    Raises:
        DataError: an entry whose source term the pipeline reads as nothing.
    """

    def __init__(self, entries: Sequence[Term], src_text: TextPipeline) -> None:
        self.entries = tuple(entries)
        self._keys: list[str] = []
        # Entries by their first run of letters and digits, which a whole-word match finds as a
        # whole run in the sentence: a sentence is searched only for the entries it may hold.
        self._by_anchor: dict[str, list[int]] = {}
        self._unanchored: list[int] = []
        for number, entry in enumerate(self.entries):
            assert entry.source is not None, "a glossary entry has a source term"
            key = _spelled(src_text.pieces(entry.source))[0].strip()
            if not key:
                raise DataError("source term reads as nothing", where=entry.where)
            self._keys.append(key)
            anchor = next(iter(_runs(key)), None)
            if anchor is None:
                self._unanchored.append(number)
            else:
                self._by_anchor.setdefault(anchor, []).append(number)

    def __len__(self) -> int:
        return len(self.entries)

    def find(self, src_pieces: Sequence[str]) -> list[SentenceTerm]:
        """The entries whose source term occurs in a sentence of source pieces (as the model
        reads it), in the order of their first occurrence; each with the piece spans of its
        occurrences. A match inside a longer entry's match is not counted."""
        text, owner = _spelled(src_pieces)
        found: list[tuple[int, int, int]] = []  # (entry, first char, end char)
        maybe = set(self._unanchored)
        for run in _runs(text):
            maybe.update(self._by_anchor.get(run, ()))
        for number in sorted(maybe):
            key = self._keys[number]
            found.extend((number, start, start + len(key)) for start in _occurrences(key, text))
        found.sort(key=lambda match: (match[1], -match[2]))
        spans: dict[int, list[tuple[int, int]]] = {}
        covering = (-1, -1)
        for number, start, end in found:
            if covering[0] <= start and end <= covering[1] and (start, end) != covering:
                continue  # inside a longer match
            if end > covering[1]:
                covering = (start, end)
            spans.setdefault(number, []).append((owner[start], owner[end - 1] + 1))
        terms: list[SentenceTerm] = []
        targets: set[str] = set()
        for number, entry_spans in spans.items():
            entry = self.entries[number]
            if entry.target not in targets:
                targets.add(entry.target)
                terms.append(SentenceTerm(term=entry, source_spans=tuple(entry_spans)))
        return terms


def _spelled(pieces: Sequence[str]) -> tuple[str, list[int]]:
    """The text that ``pieces`` spell, lowercased character by character ('▁' read as a
    space), and the piece each character comes from."""
    chars: list[str] = []
    owner: list[int] = []
    for number, piece in enumerate(pieces):
        for char in piece.replace(WORD_START, " "):
            lowered = char.lower()
            chars.append(lowered if len(lowered) == 1 else char)
            owner.append(number)
    return "".join(chars), owner


def _runs(text: str) -> list[str]:
    """The runs of letters and digits of ``text``, in order."""
    return ["".join(run) for alnum, run in itertools.groupby(text, key=str.isalnum) if alnum]


def _occurrences(key: str, text: str) -> Iterator[int]:
    """Where ``key`` starts in ``text`` as whole words: not inside a run of letters or digits
    at either end."""
    start = text.find(key)
    while start >= 0:
        end = start + len(key)
        before = text[start - 1] if start > 0 else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() and key[0].isalnum()) and not (
            after.isalnum() and key[-1].isalnum()
        ):
            yield start
        start = text.find(key, start + 1)
