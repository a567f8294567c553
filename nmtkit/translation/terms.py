"""The terms one sentence's translation must use: its bare constraints and the glossary entries
its source holds, made into the search's phrases, checked against what fits, and reported on
afterwards (whether each was met, and whether its words are aligned to its source term).

What fits: a beam of K keeps at most K - 1 phrases (one place for a hypothesis that has met
none), and the phrases (with the prefix) must fit in the sentence's output cap, in order; the
rest are dropped with a warning naming the sentence. A bare constraint longer than the cap by
itself is an error naming its file and line; a glossary term is then only dropped for that
sentence.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from nmtkit.alignment.links import Link
from nmtkit.data.text import SPECIAL_PIECES, TextPipeline, word_index
from nmtkit.errors import DataError
from nmtkit.search.constrained import Phrase
from nmtkit.terminology.glossary import Glossary, SentenceTerm, Term

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class TermUse:
    """A term one translation had to use.

    Attributes:
        target, source: the target phrase and its source term (None for a bare constraint).
        met: the translation contains the phrase's pieces, in order, side by side.
        aligned: a word link joins a word of the phrase to a word of its source term (None
            when the source term is unknown or the translation has no links).
    """

    target: str
    source: str | None
    met: bool
    aligned: bool | None = None


@dataclass(frozen=True, slots=True)
class SentenceTerms:
    """The terms kept for one sentence, and the same as the search's phrases."""

    terms: tuple[SentenceTerm, ...] = ()
    phrases: tuple[Phrase, ...] = ()


NO_TERMS = SentenceTerms()


def plan_terms(
    bare: Sequence[Term],
    glossary: Glossary | None,
    src_pieces: Sequence[str],
    *,
    tgt_text: TextPipeline,
    cap: int,
    used: int,
    most: int,
    what: str,
) -> SentenceTerms:
    """The terms of one sentence of source pieces ``src_pieces`` (as searched): ``bare``
    constraints first, then the glossary's matches, kept while they fit.

    Args:
        cap: the sentence's output cap (pieces, EOS excluded); used: pieces a prefix takes.
        most: the most phrases kept (the beam size - 1).
        what: the sentence, for warnings ("input line 12").

    Raises:
        DataError: a term that reads as no target piece, or a bare constraint longer than the
            cap, naming its file and line.
    """
    found = [SentenceTerm(term=term) for term in bare]
    if glossary is not None:
        found += glossary.find(src_pieces)
    kept: list[SentenceTerm] = []
    phrases: list[Phrase] = []
    dropped: list[str] = []
    for term in found:
        ids = tuple(tgt_text.encode(term.term.target))
        if not ids:
            raise DataError(
                f"term {term.term.target!r} reads as no target piece", where=term.term.where
            )
        if len(ids) > cap and term.term.source is None:
            raise DataError(
                f"constraint {term.term.target!r} is {len(ids)} pieces, more than the {cap} "
                f"the output of {what} may have",
                where=term.term.where,
                hint="raise --max-len-a/--max-len-b, or shorten the constraint",
            )
        if len(phrases) >= most or used + len(ids) > cap:
            dropped.append(term.term.target)
            continue
        used += len(ids)
        kept.append(term)
        source = tuple(p for start, end in term.source_spans for p in range(start, end))
        phrases.append(Phrase(ids=ids, source=source))
    if dropped:
        reason = f"at most {most} per sentence at this beam size, within its output cap of {cap}"
        log.warning("%s: constraints dropped (%s): %s", what, reason, ", ".join(map(repr, dropped)))
    return SentenceTerms(terms=tuple(kept), phrases=tuple(phrases))


def term_uses(
    planned: SentenceTerms,
    tokens: Sequence[int],
    *,
    src_pieces: Sequence[str],
    tgt_pieces: Sequence[str],
    links: Sequence[Link] | None,
) -> tuple[TermUse, ...]:
    """How a hypothesis of ``tokens`` (pieces ``tgt_pieces``) uses its sentence's terms."""
    uses = []
    tgt_words = word_index(tgt_pieces) if tgt_pieces else []
    src_words = word_index(src_pieces) if src_pieces else []
    for term, phrase in zip(planned.terms, planned.phrases, strict=True):
        starts = _occurrences(phrase.ids, tokens)
        aligned = None
        if links is not None and phrase.source:
            targets = {tgt_words[p] for s in starts for p in range(s, s + len(phrase.ids))}
            sources = {src_words[p] for p in phrase.source if p < len(src_words)}
            aligned = any(j in targets and i in sources for i, j in links)
        uses.append(
            TermUse(
                target=term.term.target, source=term.term.source, met=bool(starts), aligned=aligned
            )
        )
    return tuple(uses)


def continues_word(tgt_text: TextPipeline) -> torch.Tensor:
    """The target pieces that would glue onto the word before them: no word-start mark, and a
    letter, digit or hyphen first (a hyphenated compound is one word to BLEU's 13a tokens too)
    (:attr:`~nmtkit.registry.Constraints.continues_word`), [V]."""
    glue = torch.zeros(tgt_text.vocab_size, dtype=torch.bool)
    for number, piece in enumerate(tgt_text.id_to_piece(range(tgt_text.vocab_size))):
        glue[number] = number >= len(SPECIAL_PIECES) and (piece[:1].isalnum() or piece[:1] == "-")
    return glue


def _occurrences(phrase: Sequence[int], tokens: Sequence[int]) -> list[int]:
    """Where ``phrase`` starts in ``tokens``."""
    width = len(phrase)
    return [
        start
        for start in range(len(tokens) - width + 1)
        if list(tokens[start : start + width]) == list(phrase)
    ]
