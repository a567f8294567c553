"""What translation returns: each input line's candidates (text, score, word links) and, with
sentence splitting, the sentences they join."""

from __future__ import annotations

from dataclasses import dataclass

from nmtkit.alignment.links import Link


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """One hypothesis as text: its score (:attr:`nmtkit.registry.Hypothesis.score`) and, when
    asked for, its word alignment as (source word, target word) links, 0-based."""

    text: str
    score: float
    links: tuple[Link, ...] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Part:
    """One sentence of a split line and its best translation."""

    source: str
    candidate: Candidate


@dataclass(frozen=True, kw_only=True, slots=True)
class Translation:
    """The translations of input line ``index`` (0-based), best first.

    With sentence splitting, ``parts`` holds the line's sentences with their translations (none
    for an empty line), and the one candidate joins them
    (:func:`~nmtkit.translation.splitting.join_parts`): their texts laid out as the sentences
    were in the line, the sum of their scores (each as its search ranked it, so a
    length-normalized score is normalized per sentence), and their links renumbered to words of
    the whole line. Without splitting, ``parts`` is None.
    """

    index: int
    source: str
    candidates: tuple[Candidate, ...]
    parts: tuple[Part, ...] | None = None

    @property
    def text(self) -> str:
        return self.candidates[0].text if self.candidates else ""
