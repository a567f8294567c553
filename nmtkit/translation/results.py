"""What translation returns: each input line's candidates (text, score, word links and the
attention they come from) and, with sentence splitting, the sentences they join."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from nmtkit.alignment.links import Link, argmax_links, piece_weights_to_words
from nmtkit.data.text import TextPipeline, words
from nmtkit.registry import Hypothesis
from nmtkit.translation.terms import TermUse


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class WordAttention:
    """The soft alignment of one hypothesis in words, as ``nmtkit align`` draws it:
    ``weights[j, i]`` is the attention target word j paid to source word i, its pieces gathered
    (:func:`~nmtkit.alignment.links.merge_to_words`), each row summing to 1. The words are the
    model's tokenized words, which the links number."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    weights: np.ndarray  # [T_words, S_words]


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """One hypothesis as text: its score (:attr:`nmtkit.registry.Hypothesis.score`) and, when
    asked for, its word alignment as (source word, target word) links, 0-based, read off
    ``attention`` by argmax (what ``nmtkit align`` prints by default); under constraints or a
    glossary, how it uses each term."""

    text: str
    score: float
    links: tuple[Link, ...] | None = None
    attention: WordAttention | None = field(default=None, compare=False)
    terms: tuple[TermUse, ...] = ()  # the terms it had to use (constraints, a glossary)


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


def word_attention(
    weights: torch.Tensor, src_pieces: list[str], tgt_pieces: list[str]
) -> WordAttention:
    """Attention over words from attention over pieces [T+1, S+1] (EOS step and position
    included)."""
    return WordAttention(
        source=tuple(words(src_pieces)),
        target=tuple(words(tgt_pieces)),
        weights=piece_weights_to_words(weights, src_pieces, tgt_pieces),
    )


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
    links = attention = None
    if with_alignment and hyp.weights is not None:
        tgt_pieces = tgt_text.id_to_piece(hyp.tokens)
        attention = word_attention(hyp.weights, src_pieces, tgt_pieces)
        links = tuple(argmax_links(attention.weights))
    text = tgt_text.decode(hyp.tokens)
    return Candidate(text=text, score=hyp.score, links=links, attention=attention)
