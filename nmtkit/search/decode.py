"""Decode many id sequences with one search strategy: sort by length, batch
(:class:`~nmtkit.search.length_policy.LengthPolicy`), search, and give the hypotheses back in
input order. Translation and validation both decode through here."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch

from nmtkit import registry
from nmtkit.config import ComponentSpec
from nmtkit.data.batching import collate_source, pad
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.models import Seq2Seq
from nmtkit.registry import Hypothesis, SearchStrategy
from nmtkit.runtime import autocast
from nmtkit.search.constrained import Phrase, constraints_of
from nmtkit.search.ensemble import Ensemble
from nmtkit.search.length_policy import DEFAULT_MAX_TOKENS, LengthPolicy
from nmtkit.search.side_by_side import run_side_by_side

log = logging.getLogger(__name__)


def build_strategy(spec: ComponentSpec) -> SearchStrategy:
    """Instantiate a registered search strategy from its spec."""
    return registry.get("search", spec.name)(spec.options)


def max_lengths(src_lengths: torch.Tensor, *, a: float, b: int) -> torch.Tensor:
    """Output caps a * |x| + b per sentence (source length without EOS): [B]."""
    return (a * (src_lengths - 1).float() + b).floor().long().clamp(min=1)


def output_cap(num_pieces: int, *, a: float, b: int) -> int:
    """The output cap of one sentence of ``num_pieces`` source pieces (EOS not counted), as
    :func:`max_lengths` computes it."""
    return int(max_lengths(torch.tensor([num_pieces + 1]), a=a, b=b)[0])


def decode_sequences(
    model: Seq2Seq | Ensemble,
    sequences: Sequence[Sequence[int]],
    strategy: SearchStrategy,
    *,
    batch_size: int,
    max_len_a: float,
    max_len_b: int,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    with_weights: bool = False,
    prefixes: Sequence[Sequence[int]] | None = None,
    constraints: Sequence[Sequence[Phrase]] | None = None,
    continues_word: torch.Tensor | None = None,
    precision: str = "fp32",
    workers: int = 1,
) -> list[list[Hypothesis]]:
    """Search every id sequence, batching by length; results come back in input order.

    A batch holds at most ``batch_size`` sentences and ``max_tokens`` padded source pieces
    (EOS included); a longer sentence is searched alone (:meth:`LengthPolicy.batches`).
    ``precision`` is that of the matrix products (:func:`nmtkit.runtime.autocast`).

    ``prefixes`` holds each sequence's forced target ids (empty: none); a sentence's length cap
    a * |x| + b is raised to its prefix's length, so that the whole prefix is kept.

    ``strategy`` may be a :class:`~nmtkit.shortlist.restricted.ShortlistSearch`, which
    restricts each batch's output words to its candidates.

    ``constraints`` holds each sequence's target phrases (empty: none), which every
    hypothesis must contain (:mod:`nmtkit.search.constrained`; the caps are not raised for
    them: the caller keeps what fits); ``continues_word`` [V] marks the pieces that may not
    follow a phrase (:attr:`~nmtkit.registry.Constraints.continues_word`).

    ``model`` is one model or an :class:`~nmtkit.search.ensemble.Ensemble` of several.

    ``workers`` above 1 searches that many batches at a time, side by side
    (:func:`~nmtkit.search.side_by_side.run_side_by_side`); the hypotheses are the same. A
    sentence over ``max_tokens`` is still searched alone, in this thread, after the rest.
    """
    policy = LengthPolicy(max_source_len=0, max_tokens=max_tokens)
    batches = policy.batches([len(s) for s in sequences], max_sentences=batch_size)
    results: list[list[Hypothesis]] = [[] for _ in sequences]
    model.eval()
    device = next(model.parameters()).device

    def search(chunk: list[int]) -> None:
        with torch.inference_mode(), autocast(precision, device):  # thread-local: per worker
            src, lengths = collate_source([sequences[i] for i in chunk])
            src, lengths = src.to(device), lengths.to(device)
            caps = max_lengths(lengths, a=max_len_a, b=max_len_b)  # [b]
            prefix = None
            if prefixes is not None and any(prefixes[i] for i in chunk):
                prefix = pad([prefixes[i] for i in chunk]).to(device)  # [b, P]
                caps = torch.maximum(caps, (prefix != PAD_ID).sum(dim=1))
            batch_constraints = None
            if constraints is not None:
                batch_constraints = constraints_of(
                    [constraints[i] for i in chunk],
                    src_len=src.size(1),
                    continues_word=continues_word,
                    device=device,
                )
            found = strategy.search(
                model,
                src,
                lengths,
                max_lengths=caps,
                pad_id=PAD_ID,
                bos_id=BOS_ID,
                eos_id=EOS_ID,
                with_weights=with_weights,
                prefix=prefix,
                constraints=batch_constraints,
            )
        for i, hyps in zip(chunk, found, strict=True):
            results[i] = hyps

    def over_budget(chunk: list[int]) -> bool:  # a sentence longer than max_tokens, with EOS
        return len(chunk) == 1 and len(sequences[chunk[0]]) + 1 > max_tokens

    if workers <= 1:
        run_side_by_side(batches, search, workers=1)
        return results
    # A sentence over the budget is searched alone, after the rest, as with one worker: two of
    # them at once could hold twice the memory that a line was checked against. The others go
    # longest first, so that no worker is left with a long batch at the end.
    together = sorted(
        (chunk for chunk in batches if not over_budget(chunk)),
        key=lambda chunk: -max(len(sequences[i]) for i in chunk),
    )
    run_side_by_side(together, search, workers=workers)
    run_side_by_side([chunk for chunk in batches if over_budget(chunk)], search, workers=1)
    return results
