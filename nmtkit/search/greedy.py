"""Greedy search: the most probable word at every step, batched, finished sentences dropped."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from nmtkit.registry import Hypothesis, SearchStrategy, Translatable, register
from nmtkit.search.common import restrict_next_words


@register("search", "greedy")
class GreedySearch(SearchStrategy):
    """Pick the most probable word at every step."""

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
    ) -> list[list[Hypothesis]]:
        batch_size, src_len = src.shape
        state = model.init_state(model.encode(src, lengths))
        steps = int(max_lengths.max()) + 1
        device = src.device
        tokens = torch.full((batch_size, steps), eos_id, dtype=torch.long, device=device)  # [B, T]
        weights = (
            torch.zeros(batch_size, steps, src_len, device=device) if with_weights else None
        )  # [B, T, S]
        log_prob = torch.zeros(batch_size, device=device)
        out_lengths = torch.zeros(batch_size, dtype=torch.long, device=device)
        active = torch.arange(batch_size, device=device)  # rows of the batch still decoding
        prev = torch.full((batch_size,), bos_id, dtype=torch.long, device=device)
        for t in range(steps):
            step = model.decode_step(prev, state)
            log_probs = restrict_next_words(
                step.log_probs, max_lengths[active] <= t, banned=(pad_id, bos_id), eos_id=eos_id
            )
            best, word = log_probs.max(dim=-1)  # [b], [b]
            tokens[active, t] = word
            log_prob[active] += best
            if weights is not None:
                weights[active, t] = step.weights.float()
            done = word == eos_id
            out_lengths[active[done]] = t
            keep = (~done).nonzero().squeeze(1)
            if keep.numel() == 0:
                break
            active, prev, state = active[keep], word[keep], step.state.select(keep)
        return [
            [
                Hypothesis(
                    tokens=tokens[b, : out_lengths[b]].tolist(),
                    score=float(log_prob[b]) / float(out_lengths[b] + 1),
                    log_prob=float(log_prob[b]),
                    weights=None if weights is None else weights[b, : out_lengths[b] + 1].cpu(),
                )
            ]
            for b in range(batch_size)
        ]
