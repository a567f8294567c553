"""Decode many id sequences with one search strategy: sort by length, batch, search, and give
the hypotheses back in input order. Translation and validation both decode through here.

``LengthPolicy`` is the one rule for long input of every command that runs a model over
sentences (translate, align): a cap on the pieces read, and batches under a token budget.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from nmtkit import registry
from nmtkit.config import ComponentSpec
from nmtkit.data.batching import batch_by_tokens, collate_source, pad
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.errors import ConfigError
from nmtkit.models import Seq2Seq
from nmtkit.registry import Hypothesis, SearchStrategy
from nmtkit.runtime import autocast
from nmtkit.search.ensemble import Ensemble
from nmtkit.search.shortlist import Shortlist

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 8192  # padded pieces a decoding batch may hold (sentences x (longest + 1))


@dataclass(frozen=True, kw_only=True, slots=True)
class LengthPolicy:
    """How translate and align (and anything else that runs a model over sentences) treat long
    input: one rule, kept here.

    A sentence is read whole, however much longer than the training sentences: no encoder has a
    position limit, and nothing is cut unless the user asks for ``max_source_len`` (then a
    longer sentence is cut to that many pieces, with a warning naming it: :meth:`cut`).
    Sentences are batched by length so that
    *sentences × (longest + 1)* stays within ``max_tokens`` (:meth:`batches`): a batch of long
    sentences holds fewer of them, and a sentence longer than the budget is decoded alone, so
    memory grows with one sentence's length, not with the batch size times the longest.

    Attributes:
        max_source_len: the most pieces of a sentence (EOS not counted) the model reads;
            0 (the default) for no cap.
        max_tokens: the budget of a batch in padded pieces, EOS included (a beam search holds
            beam-size times as many).

    Raises:
        ConfigError: ``max_source_len`` below 0 or ``max_tokens`` below 1.
    """

    max_source_len: int = 0
    max_tokens: int = DEFAULT_MAX_TOKENS

    def __post_init__(self) -> None:
        if self.max_source_len < 0:
            raise ConfigError(
                f"--max-source-len must be 0 (no cap) or more, got {self.max_source_len}"
            )
        if self.max_tokens < 1:
            raise ConfigError(f"--max-tokens must be at least 1, got {self.max_tokens}")

    @classmethod
    def of(
        cls, *, max_source_len: int | None = None, max_tokens: int | None = None
    ) -> LengthPolicy:
        """The policy with the bounds given, and the defaults for those that are None."""
        given = {"max_source_len": max_source_len, "max_tokens": max_tokens}
        return cls(**{key: value for key, value in given.items() if value is not None})

    def cut(self, ids: Sequence[int], *, what: str) -> list[int]:
        """Return ``ids`` whole, or its first ``max_source_len`` with a warning naming ``what``
        (e.g. "input line 12")."""
        cap = self.max_source_len
        if not cap or len(ids) <= cap:
            return list(ids)
        log.warning(
            "%s has %d pieces, over --max-source-len %d: reading only the first %d",
            what,
            len(ids),
            cap,
            cap,
        )
        return list(ids[:cap])

    def batches(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int] | None = None,
        *,
        max_sentences: int,
    ) -> list[list[int]]:
        """Indices of the sentences in batches, shortest first, each within ``max_tokens``
        (counting the longer side of a pair) and ``max_sentences``; a sentence over the
        budget is a batch of its own (:func:`nmtkit.data.batching.batch_by_tokens`)."""
        src = np.asarray(src_lengths, dtype=np.int64).reshape(-1)
        tgt = src if tgt_lengths is None else np.asarray(tgt_lengths, dtype=np.int64).reshape(-1)
        found = batch_by_tokens(src, tgt, max_tokens=self.max_tokens, max_sentences=max_sentences)
        return [batch.tolist() for batch in found]


def build_strategy(spec: ComponentSpec) -> SearchStrategy:
    """Instantiate a registered search strategy from its spec."""
    return registry.get("search", spec.name)(spec.options)


def max_lengths(src_lengths: torch.Tensor, *, a: float, b: int) -> torch.Tensor:
    """Output caps a * |x| + b per sentence (source length without EOS): [B]."""
    return (a * (src_lengths - 1).float() + b).floor().long().clamp(min=1)


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
    precision: str = "fp32",
    shortlist: Shortlist | None = None,
) -> list[list[Hypothesis]]:
    """Search every id sequence, batching by length; results come back in input order.

    A batch holds at most ``batch_size`` sentences and ``max_tokens`` padded source pieces
    (EOS included); a longer sentence is searched alone (:meth:`LengthPolicy.batches`).
    ``precision`` is that of the matrix products (:func:`nmtkit.runtime.autocast`).

    ``prefixes`` holds each sequence's forced target ids (empty: none); a sentence's length cap
    a * |x| + b is raised to its prefix's length, so that the whole prefix is kept.

    ``shortlist`` restricts each batch's output words to its candidates
    (:meth:`Shortlist.search`, which says what that changes in the scores).

    ``model`` is one model or an :class:`~nmtkit.search.ensemble.Ensemble` of several.
    """
    policy = LengthPolicy(max_source_len=0, max_tokens=max_tokens)
    batches = policy.batches([len(s) for s in sequences], max_sentences=batch_size)
    results: list[list[Hypothesis]] = [[] for _ in sequences]
    model.eval()
    device = next(model.parameters()).device
    with torch.inference_mode(), autocast(precision, device):
        for chunk in batches:
            src, lengths = collate_source([sequences[i] for i in chunk])
            src, lengths = src.to(device), lengths.to(device)
            caps = max_lengths(lengths, a=max_len_a, b=max_len_b)  # [b]
            prefix = None
            if prefixes is not None and any(prefixes[i] for i in chunk):
                prefix = pad([prefixes[i] for i in chunk]).to(device)  # [b, P]
                caps = torch.maximum(caps, (prefix != PAD_ID).sum(dim=1))
            search = strategy.search if shortlist is None else partial(shortlist.search, strategy)
            found = search(
                model,
                src,
                lengths,
                max_lengths=caps,
                pad_id=PAD_ID,
                bos_id=BOS_ID,
                eos_id=EOS_ID,
                with_weights=with_weights,
                prefix=prefix,
            )
            for i, hyps in zip(chunk, found, strict=True):
                results[i] = hyps
    return results
