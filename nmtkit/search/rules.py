"""What every search strategy shares: the next-word rules (banned ids, forced target prefixes,
the length cap)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from nmtkit.errors import ConfigError
from nmtkit.values import Constraints

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


def refuse_constraints(constraints: Constraints | None, strategy: str) -> None:
    """Constraints need a beam: other strategies refuse them.

    Raises:
        ConfigError: ``constraints`` given to ``strategy``.
    """
    if constraints is not None:
        raise ConfigError(
            f"{strategy} cannot follow constraints or terminology",
            hint="use beam search (--beam 2 or more)",
        )
