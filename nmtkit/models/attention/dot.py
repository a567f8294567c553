"""Dot-product attention scorers: dot and general (Luong et al., 2015, §3.1), scaled dot product
and multi-head attention (Vaswani et al., 2017, §3.2.1-3.2.2).

Beyond the glossary of :mod:`nmtkit.models`: N is the number of heads, A/N the width of one
head; C, the annotations' width, is the scorer's ``key_size``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmtkit.errors import ConfigError
from nmtkit.registry import Attended, AttentionScorer, DecoderState, SoftmaxAttention, register


def dot_energies(query: Tensor, keys: Tensor) -> Tensor:
    """Dot products of ``query`` [B, X] with every key in ``keys`` [B, S, X]: [B, S]."""
    return torch.bmm(keys, query[:, :, None]).squeeze(-1)  # [B, S]


@register("attention", "dot")
class DotAttention(SoftmaxAttention):
    """Luong et al. (2015, §3.1) "dot" score e_ij = s_{i-1}^T h_j: no parameters at all.

    Raises:
        ConfigError: the decoder state and the annotations differ in width (D != C).
    """

    description = "Luong dot score s^T h (needs decoder hidden_size == encoder output size)"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        pass

    def __init__(self, config: Config, *, query_size: int, key_size: int) -> None:
        super().__init__(config, query_size=query_size, key_size=key_size)
        if query_size != key_size:
            raise ConfigError(
                f"dot attention needs the decoder hidden_size ({query_size}) to equal the "
                f"encoder output size ({key_size})",
                hint="use model.attention=general or scaled-dot, which project between sizes",
            )

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """The keys are the annotations themselves, h_j [B, S, C]."""
        return annotations

    def energies(self, query: Tensor, state: DecoderState) -> Tensor:
        """e_ij [B, S] for s_{i-1} [B, D] against h_j [B, S, C], D = C."""
        return dot_energies(query, state.keys)


@register("attention", "general")
class GeneralAttention(SoftmaxAttention):
    """Luong et al. (2015, §3.1) "general" score e_ij = s_{i-1}^T W_a h_j.

    W_a h_j [B, S, D] is precomputed once per sentence, so a step costs one batched dot product.
    """

    description = "Luong general score s^T W h, W h precomputed once per sentence"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        pass

    def __init__(self, config: Config, *, query_size: int, key_size: int) -> None:
        super().__init__(config, query_size=query_size, key_size=key_size)
        self.key_proj = nn.Linear(key_size, query_size, bias=False)  # W_a

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """Precompute W_a h_j once per sentence: [B, S, C] -> [B, S, D]."""
        return self.key_proj(annotations)

    def energies(self, query: Tensor, state: DecoderState) -> Tensor:
        """e_ij [B, S] for s_{i-1} [B, D] against W_a h_j [B, S, D]."""
        return dot_energies(query, state.keys)


@register("attention", "scaled-dot")
class ScaledDotAttention(SoftmaxAttention):
    """Scaled dot-product attention (Vaswani et al., 2017, §3.2.1) with one head:
    e_ij = (W_q s_{i-1})^T (W_k h_j) / sqrt(A).

    Dividing by sqrt(A) keeps the energies' variance independent of the projection width, so
    the softmax does not saturate as A grows. The context is still c_i = sum_j alpha_ij h_j.
    """

    description = "Vaswani scaled dot product (W_q s)^T (W_k h) / sqrt(A), one head"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        hidden_size: int = 256  # A, the width queries and keys are projected to

        def __post_init__(self) -> None:
            if self.hidden_size < 1:
                raise ConfigError(
                    f"hidden_size must be at least 1, got {self.hidden_size}",
                    where="model.attention.hidden_size",
                )

    def __init__(self, config: Config, *, query_size: int, key_size: int) -> None:
        super().__init__(config, query_size=query_size, key_size=key_size)
        self.query_proj = nn.Linear(query_size, config.hidden_size, bias=False)  # W_q
        self.key_proj = nn.Linear(key_size, config.hidden_size, bias=False)  # W_k
        self.scale = 1.0 / math.sqrt(config.hidden_size)

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """Precompute W_k h_j once per sentence: [B, S, C] -> [B, S, A]."""
        return self.key_proj(annotations)

    def energies(self, query: Tensor, state: DecoderState) -> Tensor:
        """e_ij [B, S] for s_{i-1} [B, D] against W_k h_j [B, S, A]."""
        return dot_energies(self.query_proj(query), state.keys) * self.scale

    def query_layers(self) -> tuple[nn.Linear, ...]:
        return (self.query_proj,)  # W_q


@register("attention", "multihead")
class MultiHeadAttention(AttentionScorer):
    """Multi-head attention (Vaswani et al., 2017, §3.2.2) from one query s_{i-1}:
    head_n = sum_j softmax_j(q_n^T k_nj / sqrt(A/N)) v_nj and c_i = W_o [head_1; ...; head_N].

    q = W_q s_{i-1}, k_j = W_k h_j and v_j = W_v h_j are A wide and split into N heads of A/N.
    W_k h_j and W_v h_j are precomputed once per sentence and travel together as the state's
    keys, [B, S, 2A]. W_o maps the concatenated heads back to the annotations' width C, so the
    decoder reads a context of the usual size.

    The returned ``weights`` are the mean of the N heads' weights: they still sum to 1 over the
    real positions and are 0 on padding, and they are what alignments, attention plots and
    coverage read. Each head alone may attend elsewhere; the context comes from all of them.
    """

    description = "Vaswani multi-head scaled dot product; weights are the mean over heads"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        hidden_size: int = 256  # A, all heads together; divisible by num_heads
        num_heads: int = 4  # N (paper: 8 heads over 512)

        def __post_init__(self) -> None:
            where = "model.attention"
            if self.num_heads < 1 or self.hidden_size < 1:
                raise ConfigError("hidden_size and num_heads must be at least 1", where=where)
            if self.hidden_size % self.num_heads:
                raise ConfigError(
                    f"hidden_size {self.hidden_size} is not divisible by "
                    f"num_heads {self.num_heads}",
                    where=where,
                    hint="each head gets hidden_size / num_heads dimensions",
                )

    def __init__(self, config: Config, *, query_size: int, key_size: int) -> None:
        super().__init__(config, query_size=query_size, key_size=key_size)
        a = config.hidden_size
        self.num_heads = config.num_heads
        self.query_proj = nn.Linear(query_size, a, bias=False)  # W_q
        self.key_value_proj = nn.Linear(key_size, 2 * a, bias=False)  # [W_k; W_v]
        self.output_proj = nn.Linear(a, key_size, bias=False)  # W_o
        self.scale = 1.0 / math.sqrt(a // config.num_heads)

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """Precompute [W_k h_j; W_v h_j] once per sentence: [B, S, C] -> [B, S, 2A]."""
        return self.key_value_proj(annotations)

    def forward(self, query: Tensor, state: DecoderState) -> Attended:
        b, s, _ = state.keys.shape
        n = self.num_heads
        packed = state.keys.view(b, s, 2, n, -1).permute(2, 0, 3, 1, 4)  # [2, B, N, S, A/N]
        keys, values = packed.unbind(0)  # [B, N, S, A/N] each
        q = self.query_proj(query).view(b, n, 1, -1)  # [B, N, 1, A/N]
        energies = (q @ keys.transpose(-1, -2)).squeeze(2) * self.scale  # [B, N, S]
        weights = energies.masked_fill(state.pad_mask[:, None], float("-inf")).softmax(dim=-1)
        heads = (weights[:, :, None] @ values).squeeze(2)  # [B, N, A/N]
        context = self.output_proj(heads.flatten(1))  # [B, C]
        return Attended(context=context, weights=weights.mean(dim=1))  # [B, S]

    def query_layers(self) -> tuple[nn.Linear, ...]:
        return (self.query_proj,)  # W_q
