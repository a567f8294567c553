"""Cosine attention: e_ij = g * cos(W_q s_{i-1}, W_k h_j), with a learned sharpness g.

An example nmtkit plugin (docs/plugins.md walks through it). Importing this module registers
the scorer; nmtkit imports it through the ``nmtkit.plugins`` entry point or ``--user-dir``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmtkit.registry import DecoderState, SoftmaxAttention, register


@register("attention", "cosine")
class CosineAttention(SoftmaxAttention):
    """Scores by the cosine of projected query and keys, scaled by a learned sharpness."""

    description = "cosine similarity of projected query and keys, times a learned sharpness"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        hidden_size: int = 128  # width of the projected query and keys
        init_sharpness: float = 5.0  # g at the start: larger is peakier

    def __init__(self, config: Config, *, query_size: int, key_size: int) -> None:
        super().__init__(config, query_size=query_size, key_size=key_size)
        self.query_proj = nn.Linear(query_size, config.hidden_size, bias=False)
        self.key_proj = nn.Linear(key_size, config.hidden_size, bias=False)
        self.config = config
        self.log_sharpness = nn.Parameter(torch.tensor(float(config.init_sharpness)).log())

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """Unit-length projected keys, once per sentence: [B, S, C] -> [B, S, A]."""
        return nn.functional.normalize(self.key_proj(annotations), dim=-1)

    def energies(self, query: Tensor, state: DecoderState) -> Tensor:
        """g * cos(W_q s, W_k h_j): [B, D] x [B, S, A] -> [B, S]."""
        q = nn.functional.normalize(self.query_proj(query), dim=-1)  # [B, A]
        cosine = torch.bmm(state.keys, q[:, :, None]).squeeze(-1)  # [B, S]
        return self.log_sharpness.exp() * cosine

    def init_parameters(self) -> None:
        """Start at the configured sharpness, not at the model's uniform draw."""
        self.log_sharpness.fill_(torch.tensor(float(self.config.init_sharpness)).log())
