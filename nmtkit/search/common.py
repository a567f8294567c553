"""What every search strategy shares: the next-word restrictions (banned ids, the length cap)."""

from __future__ import annotations

import torch
from torch import Tensor

NEG_INF = float("-inf")


def restrict_next_words(
    log_probs: Tensor, at_cap: Tensor, *, banned: tuple[int, ...], eos_id: int
) -> Tensor:
    """Forbid the ``banned`` ids (PAD, BOS) and leave only EOS where ``at_cap`` [N]: [N, V]."""
    log_probs = log_probs.float()
    log_probs[:, list(banned)] = NEG_INF
    if not bool(at_cap.any()):
        return log_probs
    forced = torch.full_like(log_probs, NEG_INF)
    forced[:, eos_id] = log_probs[:, eos_id]  # EOS keeps its own probability
    return torch.where(at_cap[:, None], forced, log_probs)
