"""The word-by-word loop of greedy search and sampling: every row picks one word a step, and
finished rows leave the batch."""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from nmtkit.registry import DecoderState, Hypothesis, Translatable
from nmtkit.search.rules import NextWordRules


class Pick(Protocol):
    """Chooses the next word of ``rows`` [n] (indices into the search's rows) at ``step`` from
    their restricted log-probabilities [n, V]: [n]."""

    def __call__(self, log_probs: Tensor, rows: Tensor, step: int) -> Tensor: ...


def decode_rows(
    model: Translatable,
    state: DecoderState,
    rules: NextWordRules,
    *,
    row_sentences: Tensor,
    pick: Pick,
    bos_id: int,
    with_weights: bool,
) -> list[Hypothesis]:
    """Extend each of the N rows of ``state`` by one picked word a step until it picks EOS;
    finished rows leave the batch. One hypothesis per row, scored log p / length (EOS counted).

    Args:
        row_sentences: the batch index of the sentence of each row, [N] (for ``rules``).
    """
    num_rows, src_len = state.pad_mask.shape
    steps = int(rules.max_lengths.max()) + 1
    device = state.pad_mask.device
    tokens = torch.full((num_rows, steps), rules.eos_id, dtype=torch.long, device=device)  # [N, T]
    weights = torch.zeros(num_rows, steps, src_len, device=device) if with_weights else None
    log_prob = torch.zeros(num_rows, device=device)  # [N]
    out_lengths = torch.zeros(num_rows, dtype=torch.long, device=device)  # [N]
    active = torch.arange(num_rows, device=device)  # rows still decoding
    prev = torch.full((num_rows,), bos_id, dtype=torch.long, device=device)
    for t in range(steps):
        step = model.decode_step(prev, state)
        log_probs = rules.apply(step.log_probs, sentences=row_sentences[active], step=t)
        word = pick(log_probs, active, t)  # [n]
        tokens[active, t] = word
        log_prob[active] += log_probs.gather(1, word[:, None]).squeeze(1)
        if weights is not None:
            weights[active, t] = step.weights.float()
        done = word == rules.eos_id
        out_lengths[active[done]] = t
        keep = (~done).nonzero().squeeze(1)
        if keep.numel() == 0:
            break
        active, prev, state = active[keep], word[keep], step.state.select(keep)
    return [
        Hypothesis(
            tokens=tokens[r, : out_lengths[r]].tolist(),
            score=float(log_prob[r]) / float(out_lengths[r] + 1),
            log_prob=float(log_prob[r]),
            weights=None if weights is None else weights[r, : out_lengths[r] + 1].cpu(),
        )
        for r in range(num_rows)
    ]
