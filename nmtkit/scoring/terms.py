"""Terminology accuracy: the share of required target terms a translation contains, exact match
as in the WMT 2021 terminology shared task (``nmtkit score --terms``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nmtkit.errors import DataError

NAME = "TermAcc"
SIGNATURE = "tok:13a|case:mixed|match:exact"


@dataclass(frozen=True, kw_only=True, slots=True)
class RequiredTerms:
    """The target terms each hypothesis line must contain (a ``--terms`` file, read).

    Attributes:
        name: the file they come from, for messages (``terms.tsv:12``).
        lines: per hypothesis line, its terms (a term listed twice must occur twice).
    """

    name: str
    lines: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class TermMiss:
    """One required occurrence of a term that a hypothesis lacks (``line`` counts from 1)."""

    line: int
    term: str


@dataclass(frozen=True, kw_only=True, slots=True)
class TermAccuracy:
    """Required term occurrences found (``matched``) of all required (``total``), and each miss."""

    matched: int
    total: int
    misses: tuple[TermMiss, ...] = ()

    @property
    def score(self) -> float | None:
        """100 * matched / total; None when no term is required (shown as 'n/a')."""
        return None if self.total == 0 else 100.0 * self.matched / self.total

    @property
    def text(self) -> str:
        """E.g. '98.72 (1,234/1,250)', or 'n/a (0/0)'."""
        score = "n/a" if self.score is None else f"{self.score:.2f}"
        return f"{score} ({self.matched:,}/{self.total:,})"

    @property
    def signature(self) -> str:
        """E.g. 'nterms:1250|tok:13a|case:mixed|match:exact'."""
        return f"nterms:{self.total}|{SIGNATURE}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (``score`` is None when no term is required)."""
        return {
            "score": self.score,
            "matched": self.matched,
            "total": self.total,
            "misses": [{"line": miss.line, "term": miss.term} for miss in self.misses],
        }


def term_accuracy(
    hyps: Sequence[str], terms: Sequence[Sequence[str]], *, name: str = "terms"
) -> TermAccuracy:
    """Count the required target terms that occur in the hypotheses (exact-match accuracy).

    The definition follows the exact-match accuracy of the WMT 2021 terminology shared task:

    - Words are sacreBLEU's 13a tokens (``Tokenizer13a``, BLEU's default tokenizer) of the
      hypothesis and of each term, compared exactly: case-sensitive, no normalization beyond 13a.
      So punctuation next to a term does not hide it ("Paris," holds "Paris"), but a term inside
      a longer word is not found ("cat" is not in "cats").
    - A term is matched when its words occur in the hypothesis as consecutive words.
    - Each term listed on a line counts once towards ``total``; a term listed k times on a line
      needs k non-overlapping occurrences (counted left to right). Different terms are counted
      independently, so "New York" and "York" both match "New York".
    - ``score`` is 100 * matched / total, and None when no line lists a term.

    Args:
        hyps: one detokenized hypothesis per line.
        terms: per line, the target terms it must contain (empty for none).
        name: what to call ``terms`` in errors, e.g. its file name.

    Raises:
        DataError: ``terms`` and ``hyps`` differ in length, or a term has no 13a word, naming
            ``name`` and its line.
    """
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    if isinstance(terms, str) or any(isinstance(line, str) for line in terms):
        raise TypeError("terms holds a sequence of terms per line, e.g. [('Haus',), ()]")
    if len(terms) != len(hyps):
        raise DataError(
            f"{name} has {len(terms)} lines but there are {len(hyps)} hypotheses",
            hint="give one line of terms per hypothesis line, an empty line for none",
        )
    tokenize = Tokenizer13a()
    matched = total = 0
    misses: list[TermMiss] = []
    for number, (hyp, line_terms) in enumerate(zip(hyps, terms, strict=True), start=1):
        if not line_terms:
            continue
        # words of a term -> (the term as written, how many times the line lists it)
        needed: dict[tuple[str, ...], tuple[str, int]] = {}
        for term in line_terms:
            key = tuple(tokenize(term).split())
            if not key:
                raise DataError(f"term {term!r} has no word", where=f"{name}:{number}")
            written, count = needed.get(key, (term, 0))
            needed[key] = (written, count + 1)
        words = tokenize(hyp).split()
        for key, (written, count) in needed.items():
            found = min(count_occurrences(words, key), count)
            matched += found
            total += count
            misses.extend(TermMiss(line=number, term=written) for _ in range(count - found))
    return TermAccuracy(matched=matched, total=total, misses=tuple(misses))


def count_occurrences(words: Sequence[str], term: Sequence[str]) -> int:
    """Count the non-overlapping runs of ``term``'s words in ``words``, left to right."""
    if not term:
        raise ValueError("an empty term occurs everywhere")
    size = len(term)
    target = list(term)
    count = start = 0
    while start + size <= len(words):
        if list(words[start : start + size]) == target:
            count += 1
            start += size
        else:
            start += 1
    return count
