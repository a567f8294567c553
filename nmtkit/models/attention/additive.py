"""The additive alignment model of RNNsearch (Bahdanau et al., 2015, appendix A.1.2)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmtkit.models.attention.sigmoid_tanh import v_tanh
from nmtkit.registry import DecoderState, SoftmaxAttention, register


@register("attention", "additive")
class AdditiveAttention(SoftmaxAttention):
    """Alignment model e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j) (A.1.2), softmax over j."""

    description = "Bahdanau additive score v^T tanh(W s + U h), U h precomputed once per sentence"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        # A (paper: 1000). 256 rather than 512: the same val BLEU over two 30-minute seeds, 6 %
        # more updates and 80 MiB less memory in a time budget on 2 cores (docs/quality.md).
        hidden_size: int = 256

    def __init__(self, config: Config, *, query_size: int, key_size: int) -> None:
        super().__init__(config, query_size=query_size, key_size=key_size)
        self.query_proj = nn.Linear(query_size, config.hidden_size, bias=False)  # W_a
        self.key_proj = nn.Linear(key_size, config.hidden_size)  # U_a
        self.v = nn.Linear(config.hidden_size, 1, bias=False)  # v_a

    def init_paper_parameters(self, generator: torch.Generator | None = None) -> None:
        """W_a, U_a ~ N(0, 0.001^2) and v_a = 0 (B.1): every alignment starts uniform."""
        init_alignment_model(self.query_proj, self.key_proj, self.v, generator=generator)

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """Precompute U_a h_j once per sentence: [B, S, C] -> [B, S, A]."""
        return self.key_proj(annotations)

    def energies(self, query: Tensor, state: DecoderState) -> Tensor:
        """e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), [B, S], for s_{i-1} [B, D] and the keys
        U_a h_j [B, S, A] (:func:`~nmtkit.models.attention.sigmoid_tanh.v_tanh` evaluates the
        tanh through a sigmoid, which is faster)."""
        return v_tanh(self.v, self.query_proj(query), state.keys)  # [B, S]

    def query_layers(self) -> tuple[nn.Linear, ...]:
        return (self.query_proj,)  # W_a


def init_alignment_model(
    w_a: nn.Linear, u_a: nn.Linear, v_a: nn.Linear, *, generator: torch.Generator | None
) -> None:
    """The paper's initialization of an alignment model: W_a, U_a ~ N(0, 0.001^2), v_a = 0
    (B.1); biases are left as they are."""
    with torch.no_grad():
        w_a.weight.normal_(0.0, 0.001, generator=generator)
        u_a.weight.normal_(0.0, 0.001, generator=generator)
        v_a.weight.zero_()
