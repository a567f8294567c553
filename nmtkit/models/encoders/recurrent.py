"""Encoders: the bidirectional RNN of RNNsearch (Bahdanau et al., 2015, A.2.1) and the
unidirectional RNN of RNNencdec (Cho et al., 2014)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmtkit.errors import unknown_name
from nmtkit.models.encoders.gru_steps import gru_in_steps, runs_in_steps
from nmtkit.models.initialization import orthogonal_gates
from nmtkit.registry import Encoder, EncoderOutput, register

_CELLS: dict[str, Any] = {"gru": nn.GRU, "lstm": nn.LSTM}


class _RecurrentEncoder(Encoder):
    """A GRU or LSTM (torch's ``nn.GRU``/``nn.LSTM``) over the embedded source words.

    Precision: under bf16 autocast on a CPU, torch's cell runs the gate products and the gates
    (GRU: r, z, n) in bf16, but the state update h_j = n + z (h_{j-1} - n) mixes them with the
    fp32 h_{j-1} and so is fp32: the annotations and the summary are fp32 tensors whose
    per-step updates carry bf16 rounding. (The ``gru`` decoder keeps its gates fp32 too.)
    """

    bidirectional: bool

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        hidden_size: int = 256  # H, per direction
        num_layers: int = 1
        cell: str = "gru"  # gru | lstm
        dropout: float = 0.0  # between layers

    def __init__(self, config: Config, *, input_size: int) -> None:
        super().__init__(config, input_size=input_size)
        if config.cell not in _CELLS:
            raise unknown_name("cell", config.cell, _CELLS, where="model.encoder.cell")
        self.rnn = _CELLS[config.cell](
            input_size,
            config.hidden_size,
            num_layers=config.num_layers,
            dropout=config.dropout if config.num_layers > 1 else 0.0,
            batch_first=True,
            bidirectional=self.bidirectional,
        )
        self.output_size = config.hidden_size * (2 if self.bidirectional else 1)
        self.summary_size = config.hidden_size

    def init_paper_parameters(self, generator: torch.Generator | None = None) -> None:
        """Every recurrent matrix orthogonal, one per gate and direction (B.1: U, U_z, U_r)."""
        for name, param in self.rnn.named_parameters():
            if name.startswith("weight_hh"):
                orthogonal_gates(param, self.rnn.hidden_size, generator=generator)

    def _run(self, embedded: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """Return outputs [B, S, C] and final states [layers*dirs, B, H]."""
        if runs_in_steps(self.rnn, embedded):  # training: the same numbers, faster
            return gru_in_steps(self.rnn, embedded, lengths)
        packed = pack_padded_sequence(
            embedded, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        outputs, final = self.rnn(packed)
        if isinstance(final, tuple):  # LSTM: (h, c)
            final = final[0]
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=embedded.size(1))
        return outputs, final


@register("encoder", "birnn")
class BiRNNEncoder(_RecurrentEncoder):
    """Bidirectional RNN: annotations h_j = [→h_j; ←h_j] (A.2.1), summary ←h_1."""

    description = (
        "bidirectional GRU/LSTM; annotations [fwd; bwd], summary = backward state at word 1"
    )
    bidirectional = True

    def forward(self, embedded: Tensor, lengths: Tensor, pad_mask: Tensor) -> EncoderOutput:
        annotations, final = self._run(embedded, lengths)  # [B, S, 2H], [L*2, B, H]
        # The backward direction of the top layer ends at the first word: ←h_1.
        return EncoderOutput(annotations=annotations, pad_mask=pad_mask, summary=final[-1])


@register("encoder", "rnn")
class RNNEncoder(_RecurrentEncoder):
    """Unidirectional RNN (RNNencdec): annotations →h_j, summary the last state →h_Tx."""

    description = "unidirectional GRU/LSTM; summary = last state (RNNencdec)"
    bidirectional = False

    def forward(self, embedded: Tensor, lengths: Tensor, pad_mask: Tensor) -> EncoderOutput:
        annotations, final = self._run(embedded, lengths)  # [B, S, H], [L, B, H]
        return EncoderOutput(annotations=annotations, pad_mask=pad_mask, summary=final[-1])
