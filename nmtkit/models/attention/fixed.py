"""The fixed context of RNNencdec (Cho et al., 2014): no attention at all."""

from __future__ import annotations

import torch
from torch import Tensor

from nmtkit.registry import Attended, AttentionScorer, DecoderState, register


@register("attention", "none")
class FixedContext(AttentionScorer):
    """No attention (RNNencdec): every step sees the same context, the last real annotation.

    With the unidirectional ``rnn`` encoder that annotation is the encoder's final state, the
    fixed-length vector c of Cho et al. (2014).
    """

    description = "no attention: a fixed context, the last annotation (RNNencdec baseline)"
    aligns = False  # the one-hot weights say nothing about which source word a word translates

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """The weights themselves: one-hot on the last real position, [B, S]."""
        last = (~pad_mask).sum(dim=1, keepdim=True) - 1  # [B, 1]
        positions = torch.arange(pad_mask.size(1), device=pad_mask.device)[None]  # [1, S]
        return (positions == last).to(torch.get_default_dtype())

    def forward(self, query: Tensor, state: DecoderState) -> Attended:
        weights = state.keys.to(query.dtype)  # [B, S]
        context = torch.bmm(weights[:, None], state.annotations).squeeze(1)  # [B, C]
        return Attended(context=context, weights=weights)
