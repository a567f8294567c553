"""What every search strategy shares: the next-word rules (banned ids, forced target prefixes,
the length cap), and the word-by-word loop of greedy search and sampling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from nmtkit.registry import DecoderState, Hypothesis, Translatable

NEG_INF = float("-inf")


@dataclass(frozen=True, slots=True)
class NextWordRules:
    """The restrictions on every output word of one batch of sentences.

    Attributes:
        max_lengths: each sentence's cap on output words, EOS excluded, [B]; at the cap only
            EOS is left.
        prefix: forced first words of each sentence, PAD-padded, [B, P]; None when no sentence
            has one. The cap wins over the prefix.
        pad_id, bos_id: never generated. eos_id: forced at the cap.
    """

    max_lengths: Tensor
    prefix: Tensor | None
    pad_id: int
    bos_id: int
    eos_id: int

    def apply(self, log_probs: Tensor, *, sentences: Tensor, step: int) -> Tensor:
        """Restrict step ``step``'s (0-based) log-probabilities [N, V] of rows that belong to
        ``sentences`` [N] (indices into the batch): [N, V], float32.

        A forced word keeps its own log-probability, so forced words count in a score.
        """
        log_probs = log_probs.float()
        log_probs[:, [self.pad_id, self.bos_id]] = NEG_INF
        forced = self.forced_words(sentences, step)  # [N]
        return force_words(log_probs, forced, free_id=self.pad_id)

    def forced_words(self, sentences: Tensor, step: int) -> Tensor:
        """The word each row must emit at ``step``: EOS at the cap, else the prefix's word,
        else PAD (free): [N]."""
        if self.prefix is not None and step < self.prefix.size(1):
            forced = self.prefix[sentences, step]  # [N]
        else:
            forced = torch.full_like(sentences, self.pad_id)  # [N]
        at_cap = self.max_lengths[sentences] <= step
        return forced.masked_fill(at_cap, self.eos_id)


def force_words(log_probs: Tensor, words: Tensor, *, free_id: int) -> Tensor:
    """Leave only ``words[n]`` [N] possible in row n of ``log_probs`` [N, V], at its own
    log-probability; rows where ``words`` is ``free_id`` are unchanged: [N, V]."""
    free = words == free_id
    if bool(free.all()):
        return log_probs
    index = words[:, None]  # [N, 1]
    forced = torch.full_like(log_probs, NEG_INF).scatter(1, index, log_probs.gather(1, index))
    return torch.where(free[:, None], log_probs, forced)


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
