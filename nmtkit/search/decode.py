"""Decode many id sequences with one search strategy: sort by length, batch, search, and give
the hypotheses back in input order. Translation and validation both decode through here."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nmtkit import registry
from nmtkit.config import ComponentSpec
from nmtkit.data.batching import collate_source, pad
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.models import Seq2Seq
from nmtkit.registry import Hypothesis, SearchStrategy
from nmtkit.runtime import autocast


def build_strategy(spec: ComponentSpec) -> SearchStrategy:
    """Instantiate a registered search strategy from its spec."""
    return registry.get("search", spec.name)(spec.options)


def max_lengths(src_lengths: torch.Tensor, *, a: float, b: int) -> torch.Tensor:
    """Output caps a * |x| + b per sentence (source length without EOS): [B]."""
    return (a * (src_lengths - 1).float() + b).floor().long().clamp(min=1)


def decode_sequences(
    model: Seq2Seq,
    sequences: Sequence[Sequence[int]],
    strategy: SearchStrategy,
    *,
    batch_size: int,
    max_len_a: float,
    max_len_b: int,
    with_weights: bool = False,
    prefixes: Sequence[Sequence[int]] | None = None,
    precision: str = "fp32",
) -> list[list[Hypothesis]]:
    """Search every id sequence, batching by length; results come back in input order.

    ``precision`` is that of the matrix products (:func:`nmtkit.runtime.autocast`).

    ``prefixes`` holds each sequence's forced target ids (empty: none); a sentence's length cap
    a * |x| + b is raised to its prefix's length, so that the whole prefix is kept.
    """
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    results: list[list[Hypothesis]] = [[] for _ in sequences]
    model.eval()
    device = next(model.parameters()).device
    with torch.inference_mode(), autocast(precision, device):
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            src, lengths = collate_source([sequences[i] for i in chunk])
            src, lengths = src.to(device), lengths.to(device)
            caps = max_lengths(lengths, a=max_len_a, b=max_len_b)  # [b]
            prefix = None
            if prefixes is not None and any(prefixes[i] for i in chunk):
                prefix = pad([prefixes[i] for i in chunk]).to(device)  # [b, P]
                caps = torch.maximum(caps, (prefix != PAD_ID).sum(dim=1))
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
            )
            for i, hyps in zip(chunk, found, strict=True):
                results[i] = hyps
    return results
