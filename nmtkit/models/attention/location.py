"""Location-aware attention (Chorowski et al., 2015, "Attention-Based Models for Speech
Recognition", §2.2, eq. 8-9): additive attention that also sees where it attended last step.

Beyond the glossary of :mod:`nmtkit.models`: N is the number of location feature maps; C, the
annotations' width, is the scorer's ``key_size``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmtkit.errors import ConfigError
from nmtkit.models.attention.additive import init_alignment_model
from nmtkit.registry import DecoderState, SoftmaxAttention, register


@register("attention", "location")
class LocationAttention(SoftmaxAttention):
    """Location-aware score (Chorowski et al., 2015, §2.2): f_i = F * alpha_{i-1} (eq. 8) and
    e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j + U_f f_ij) (eq. 9; the paper's w, W, V, U).

    F is a 1-D convolution of N maps over the previous weights alpha_{i-1}, zero-padded so
    that f_i keeps the source length; each position's N features are projected to A and added
    inside the tanh of the additive score (Bahdanau et al., 2015, A.1.2). At the first step
    alpha_0 is all zeros (``DecoderState.start``), so f_1 = 0 and the first step is plain
    additive attention. Padding holds zero weight, just like the convolution's own zero
    padding, so the features of real positions do not depend on how much padding follows.
    """

    description = "Chorowski location-aware additive score: adds a convolution of alpha_{i-1}"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        hidden_size: int = 512  # A
        conv_channels: int = 10  # N, location feature maps (paper: 10)
        kernel_size: int = 9  # width of F; odd, so that padding keeps the length

        def __post_init__(self) -> None:
            where = "model.attention"
            if min(self.hidden_size, self.conv_channels, self.kernel_size) < 1:
                raise ConfigError(
                    "hidden_size, conv_channels and kernel_size must be at least 1", where=where
                )
            if self.kernel_size % 2 == 0:
                raise ConfigError(
                    f"kernel_size must be odd, got {self.kernel_size}",
                    where=f"{where}.kernel_size",
                    hint="an odd width centres the filter on each source position",
                )

    def __init__(self, config: Config, *, query_size: int, key_size: int) -> None:
        super().__init__(config, query_size=query_size, key_size=key_size)
        a, n, width = config.hidden_size, config.conv_channels, config.kernel_size
        self.query_proj = nn.Linear(query_size, a, bias=False)  # W_a
        self.key_proj = nn.Linear(key_size, a)  # U_a, with the score's bias b
        # F: no bias, which would only add a constant that U_a's bias already covers.
        self.location_conv = nn.Conv1d(1, n, width, padding=width // 2, bias=False)
        self.location_proj = nn.Linear(n, a, bias=False)  # U_f
        self.v = nn.Linear(a, 1, bias=False)  # v_a

    def init_paper_parameters(self, generator: torch.Generator | None = None) -> None:
        """W_a, U_a ~ N(0, 0.001^2) and v_a = 0, as in the additive model it extends."""
        init_alignment_model(self.query_proj, self.key_proj, self.v, generator=generator)

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """Precompute U_a h_j + b once per sentence: [B, S, C] -> [B, S, A]."""
        return self.key_proj(annotations)

    def energies(self, query: Tensor, state: DecoderState) -> Tensor:
        """e_ij [B, S] for s_{i-1} [B, D], the keys [B, S, A] and alpha_{i-1} [B, S]."""
        features = self.location_conv(state.prev_weights[:, None])  # [B, N, S]
        location = self.location_proj(features.transpose(1, 2))  # [B, S, A]
        hidden = torch.tanh(self.query_proj(query)[:, None] + state.keys + location)  # [B, S, A]
        return self.v(hidden).squeeze(-1)  # [B, S]

    def query_layers(self) -> tuple[nn.Linear, ...]:
        return (self.query_proj,)  # W_a
