"""A convolutional encoder: the ConvS2S encoder of Gehring et al. (2017), "Convolutional Sequence
to Sequence Learning", §3.1–3.4, as in fairseq's ``FConvEncoder``.

C below is ``channels``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch.nn.functional as F
from torch import Tensor, nn

from nmtkit.errors import ConfigError
from nmtkit.models.encoders.transformer import masked_mean, sinusoidal_positions
from nmtkit.registry import Encoder, EncoderOutput, register

_RESIDUAL_SCALE = math.sqrt(0.5)  # keeps the variance of (x + block(x)) constant (§3.4)


@register("encoder", "cnn")
class ConvEncoder(Encoder):
    """Stacked gated convolutions: annotations h_j are the last block's outputs, [B, S, C].

    The input is sqrt(E) * e_j + PE(j), projected to C channels. Each block computes
    x <- sqrt(0.5) * (x + GLU(conv(x))), where the convolution maps C to 2C channels over
    ``kernel_size`` positions and GLU([A; B]) = A * sigmoid(B) (§3.2). Padding is zeroed before
    every convolution, so it reads exactly what a sentence alone would (zeros past its end):
    results do not depend on the amount of padding.

    Departures from fairseq, kept for simplicity: sinusoidal positions (Vaswani et al., 2017)
    instead of learned ones, so any source length works; no weight normalization; and the
    annotations are the block outputs alone (fairseq also hands the attention the sum of these
    and the input embedding as values). The summary is the mean over real positions.
    """

    description = "gated 1-D convolutions (ConvS2S, GLU, residual); summary = mean"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        channels: int = 256  # C, width of every block and of the annotations
        num_layers: int = 4  # convolutional blocks
        kernel_size: int = 3  # source positions each convolution reads
        dropout: float = 0.1  # on the input and before every convolution

    def __init__(self, config: Config, *, input_size: int) -> None:
        super().__init__(config, input_size=input_size)
        if config.kernel_size < 1:
            raise ConfigError("kernel_size must be at least 1", where="model.encoder.kernel_size")
        size = config.channels
        self.embed_scale = math.sqrt(input_size)
        self.input_proj = nn.Linear(input_size, size)
        self.convs = nn.ModuleList(
            nn.Conv1d(size, 2 * size, config.kernel_size) for _ in range(config.num_layers)
        )
        # Zeros on both sides keep the length; an even kernel reads one more word to the right.
        self.padding = ((config.kernel_size - 1) // 2, config.kernel_size // 2)
        self.dropout = nn.Dropout(config.dropout)
        self.output_size = size
        self.summary_size = size

    def forward(self, embedded: Tensor, lengths: Tensor, pad_mask: Tensor) -> EncoderOutput:
        S, E = embedded.shape[1:]
        positions = sinusoidal_positions(S, E, device=embedded.device, dtype=embedded.dtype)
        x = self.input_proj(self.dropout(embedded * self.embed_scale + positions))  # [B, S, C]
        for conv in self.convs:
            x = (x + self._gated_conv(conv, x, pad_mask)) * _RESIDUAL_SCALE
        annotations = x.masked_fill(pad_mask[..., None], 0.0)
        return EncoderOutput(
            annotations=annotations, pad_mask=pad_mask, summary=masked_mean(annotations, pad_mask)
        )

    def _gated_conv(self, conv: nn.Module, x: Tensor, pad_mask: Tensor) -> Tensor:
        """GLU(conv(x)) over x [B, S, C] with padding zeroed first: [B, S, C]."""
        x = self.dropout(x.masked_fill(pad_mask[..., None], 0.0))
        x = F.pad(x.transpose(1, 2), self.padding)  # [B, C, S + kernel_size - 1]
        return F.glu(conv(x), dim=1).transpose(1, 2)  # [B, 2C, S] -> [B, C, S] -> [B, S, C]
