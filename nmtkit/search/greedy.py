"""Greedy search: the most probable word at every step, batched, finished sentences dropped."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from nmtkit.registry import Constraints, Hypothesis, SearchStrategy, Translatable, register
from nmtkit.search.rows import decode_rows
from nmtkit.search.rules import NextWordRules, refuse_constraints
from nmtkit.search.topk import row_argmax


@register("search", "greedy")
class GreedySearch(SearchStrategy):
    """Pick the most probable word at every step; the score is log p / length (EOS counted)."""

    description = "the most probable word at each step"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        pass

    @torch.no_grad()
    def search(
        self,
        model: Translatable,
        src: Tensor,
        lengths: Tensor,
        *,
        max_lengths: Tensor,
        pad_id: int,
        bos_id: int,
        eos_id: int,
        with_weights: bool = False,
        prefix: Tensor | None = None,
        constraints: Constraints | None = None,
    ) -> list[list[Hypothesis]]:
        refuse_constraints(constraints, "greedy search")
        rules = NextWordRules(max_lengths, prefix, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
        hypotheses = decode_rows(
            model,
            model.init_state(model.encode(src, lengths)),
            rules,
            row_sentences=torch.arange(src.size(0), device=src.device),
            pick=most_probable,
            bos_id=bos_id,
            with_weights=with_weights,
        )
        return [[hyp] for hyp in hypotheses]


def most_probable(log_probs: Tensor, rows: Tensor, step: int) -> Tensor:
    """The argmax word of each row of ``log_probs`` [n, V]: [n]."""
    return row_argmax(log_probs)  # = log_probs.argmax(dim=-1), faster
