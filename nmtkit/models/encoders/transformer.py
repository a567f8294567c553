"""A self-attention encoder (Vaswani et al., 2017, "Attention Is All You Need", §3.1, §3.5)
as an alternative to the RNNsearch bidirectional RNN.

C below is ``model_size``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmtkit.errors import ConfigError
from nmtkit.registry import Encoder, EncoderOutput, register


def sinusoidal_positions(
    length: int, size: int, *, device: torch.device, dtype: torch.dtype
) -> Tensor:
    """Return PE(pos, 2i) = sin(pos / 10000^(2i/size)), PE(pos, 2i+1) = cos(...) (§3.5): [S, size].

    Computed on the fly, so any source length works and nothing is stored in checkpoints.
    """
    positions = torch.arange(length, device=device, dtype=torch.float32)[:, None]  # [S, 1]
    even = torch.arange(0, size, 2, device=device, dtype=torch.float32)  # [ceil(size/2)]
    angles = positions * torch.exp(even * (-math.log(10000.0) / size))  # [S, ceil(size/2)]
    table = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)  # [S, 2*ceil(size/2)]
    return table[:, :size].to(dtype)  # [S, size]


def masked_mean(annotations: Tensor, pad_mask: Tensor) -> Tensor:
    """Average annotations [B, S, C] over the real positions of each sentence: [B, C]."""
    total = annotations.masked_fill(pad_mask[..., None], 0.0).sum(dim=1)  # [B, C]
    count = (~pad_mask).sum(dim=1, keepdim=True).to(annotations.dtype)  # [B, 1]
    return total / count


@register("encoder", "transformer")
class TransformerEncoder(Encoder):
    """Pre-norm Transformer encoder: annotations h_j are the last layer's outputs, [B, S, C].

    The input is x_j = sqrt(C) * W_in e_j + PE(j) (§3.4–3.5; W_in only when E != C), followed by
    ``num_layers`` self-attention blocks in the pre-norm arrangement (LayerNorm before each
    sublayer, one final LayerNorm), which trains without learning-rate warmup (Xiong et al., 2020).
    Padding is excluded through the key padding mask and its annotations are zeroed. The summary
    that the decoder's s_0 is made from is the mean of the annotations over real positions.
    """

    description = "self-attention layers (pre-norm, sinusoidal positions); summary = mean"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        model_size: int = 256  # C, width of every layer and of the annotations
        num_layers: int = 2
        num_heads: int = 4  # must divide model_size
        ffn_size: int = 1024  # inner width of the position-wise feed-forward sublayer
        dropout: float = 0.1  # on the input, attention weights and sublayer outputs

    def __init__(self, config: Config, *, input_size: int) -> None:
        super().__init__(config, input_size=input_size)
        if config.model_size % config.num_heads != 0:
            raise ConfigError(
                f"num_heads ({config.num_heads}) must divide model_size ({config.model_size})",
                where="model.encoder.num_heads",
            )
        size = config.model_size
        self.input_proj: nn.Module = (
            nn.Linear(input_size, size) if input_size != size else nn.Identity()
        )
        self.scale = math.sqrt(size)
        self.dropout = nn.Dropout(config.dropout)
        layer = nn.TransformerEncoderLayer(
            size,
            config.num_heads,
            dim_feedforward=config.ffn_size,
            dropout=config.dropout,
            batch_first=True,
            norm_first=True,
        )
        # No nested tensors (which drop padding in eval and change numerics): results must not
        # depend on the amount of padding. norm_first rules them out anyway; this avoids a warning.
        self.layers = nn.TransformerEncoder(
            layer, config.num_layers, norm=nn.LayerNorm(size), enable_nested_tensor=False
        )
        self.output_size = size
        self.summary_size = size

    def init_parameters(self) -> None:
        """Layer norms start as the identity (gain 1, bias 0), not at the uniform draw."""
        for module in self.modules():
            if isinstance(module, nn.LayerNorm):
                module.reset_parameters()

    def forward(self, embedded: Tensor, lengths: Tensor, pad_mask: Tensor) -> EncoderOutput:
        S = embedded.size(1)
        x = self.input_proj(embedded) * self.scale  # [B, S, C]
        x = x + sinusoidal_positions(S, self.output_size, device=x.device, dtype=x.dtype)
        x = self.layers(self.dropout(x), src_key_padding_mask=pad_mask)  # [B, S, C]
        annotations = x.masked_fill(pad_mask[..., None], 0.0)
        return EncoderOutput(
            annotations=annotations, pad_mask=pad_mask, summary=masked_mean(annotations, pad_mask)
        )
