"""The hidden Markov alignment model's distortion (Vogel, Ney & Tillmann, 1996), with Och & Ney's
NULL states (2003, Section 2.3), over emissions that a neural lexicon scores.

Each target word j is emitted by one hidden state: a source word i, or the NULL copy of the last
source word aligned. Moving from source word i' to i costs a learned jump score of i - i'
(clipped to ±max_jump); a NULL copy keeps the position it came from, so the next jump is measured
from there. Summing over every path (the forward algorithm) gives log p(target | source); its
gradient with respect to the emissions is each word's posterior over states, the alignment.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

_NEG = -1e9  # log of a forbidden transition; finite, so masked rows stay free of NaN


class JumpDistortion(nn.Module):
    """Jump scores s(i - i') and the probability of emitting from NULL.

    Args:
        max_jump: jumps beyond ±max_jump share the score of ±max_jump.
    """

    def __init__(self, max_jump: int = 8) -> None:
        super().__init__()
        self.max_jump = max_jump
        self.jump = nn.Parameter(torch.zeros(2 * max_jump + 1))
        self.null_logit = nn.Parameter(torch.tensor(-1.5))

    def _jump_scores(self, distance: torch.Tensor) -> torch.Tensor:
        return self.jump[distance.clamp(-self.max_jump, self.max_jump) + self.max_jump]

    def transitions(self, src_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log transition and initial probabilities over the 2I states.

        States 0..I-1 are the source words, I..2I-1 their NULL copies.

        Args:
            src_mask: [B, I], true for real source words.

        Returns:
            log_trans [B, 2I, 2I] (from, to) and log_init [B, 2I].
        """
        batch, length = src_mask.shape
        pos = torch.arange(length, device=src_mask.device)
        scores = self._jump_scores(pos[None, :] - pos[:, None])  # [from, to]
        scores = scores.expand(batch, length, length).masked_fill(~src_mask[:, None, :], _NEG)
        log_word = F.logsigmoid(-self.null_logit)
        log_null = F.logsigmoid(self.null_logit)
        to_words = log_word + scores.log_softmax(-1)  # [B, I, I]
        stay = torch.eye(length, dtype=torch.bool, device=src_mask.device)
        to_null = torch.where(stay, log_null, torch.full_like(stay, _NEG, dtype=scores.dtype))
        rows = torch.cat([to_words, to_null.expand(batch, length, length)], 2)  # [B, I, 2I]
        log_trans = torch.cat([rows, rows], 1)  # a NULL copy moves on as its word would
        first = self._jump_scores(pos + 1).expand(batch, length).masked_fill(~src_mask, _NEG)
        init_null = torch.where(pos == 0, log_null, torch.full_like(first[0], _NEG))
        log_init = torch.cat([log_word + first.log_softmax(-1), init_null.expand(batch, length)], 1)
        return log_trans, log_init


def log_partition(
    emissions: torch.Tensor,
    log_trans: torch.Tensor,
    log_init: torch.Tensor,
    tgt_mask: torch.Tensor,
) -> torch.Tensor:
    """The forward algorithm: log p(target | source) of each pair, summed over alignments.

    Args:
        emissions: log p(y_j | state), [B, J, S].
        log_trans: [B, S, S] (from, to); log_init: [B, S].
        tgt_mask: [B, J], true for real target words (a prefix of each row).

    Returns:
        [B].
    """
    alpha = log_init + emissions[:, 0]  # [B, S]
    for j in range(1, emissions.shape[1]):
        step = (alpha[:, :, None] + log_trans).logsumexp(1) + emissions[:, j]
        alpha = torch.where(tgt_mask[:, j : j + 1], step, alpha)
    return alpha.logsumexp(-1)


def state_posteriors(
    emissions: torch.Tensor,
    log_trans: torch.Tensor,
    log_init: torch.Tensor,
    tgt_mask: torch.Tensor,
) -> torch.Tensor:
    """p(state of y_j | source, target), [B, J, S]: the gradient of the log partition with
    respect to the emissions (the forward-backward marginals, by autograd)."""
    with torch.enable_grad():
        emissions = emissions.detach().requires_grad_(True)
        total = log_partition(emissions, log_trans.detach(), log_init.detach(), tgt_mask).sum()
        (grad,) = torch.autograd.grad(total, emissions)
    return grad * tgt_mask[:, :, None]
