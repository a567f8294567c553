"""What translation returns: each input line's candidates (text, score, word links) and, with
sentence splitting, the sentences they join."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nmtkit.alignment.links import Link, argmax_links, piece_weights_to_words
from nmtkit.data.text import TextPipeline
from nmtkit.registry import Hypothesis


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


def word_links(
    weights: torch.Tensor, src_pieces: list[str], tgt_pieces: list[str]
) -> tuple[Link, ...]:
    """Word links from attention over pieces [T+1, S+1] (EOS step and position included)."""
    if not src_pieces or not tgt_pieces:
        return ()
    return tuple(argmax_links(piece_weights_to_words(weights, src_pieces, tgt_pieces)))


def candidate_of(
    hyp: Hypothesis | None,
    src_pieces: list[str],
    *,
    tgt_text: TextPipeline,
    with_alignment: bool,
) -> Candidate:
    """``hyp`` as detokenized text with its score and, ``with_alignment``, its word links to
    ``src_pieces``; None (an empty line) is the empty candidate."""
    if hyp is None:
        return Candidate(text="", score=0.0, links=() if with_alignment else None)
    links = None
    if with_alignment and hyp.weights is not None:
        tgt_pieces = tgt_text.id_to_piece(hyp.tokens)
        links = word_links(hyp.weights, src_pieces, tgt_pieces)
    return Candidate(text=tgt_text.decode(hyp.tokens), score=hyp.score, links=links)
