"""The conditional GRU decoder (Sennrich et al., 2017, Nematus, sect. 2.3; Firat and Cho, 2016):
RNNsearch's decoder with the attention moved between two GRU transitions, so that it attends
from a state that has already read y_{i-1}. The decoder of Nematus, Marian's ``s2s`` and the
LIUM-CVC Multi30k systems; everything but :meth:`_recur` is RNNsearch's (the readout, the
search's steps, teacher forcing)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from nmtkit.models.decoders import GRUDecoder, gru_transition
from nmtkit.models.initialization import orthogonal_gates
from nmtkit.registry import DecoderState, register


@register("decoder", "cgru")
class ConditionalGRUDecoder(GRUDecoder):
    """s'_i = GRU_1(s_{i-1}, E y_{i-1}); alpha_i and c_i attended from s'_i;
    s_i = GRU_2(s'_i, c_i); p(y_i) from the maxout readout over (s_i, E y_{i-1}, c_i) as in
    ``gru``. One recurrent product more a step than ``gru`` ([B, D] x [D, 3D])."""

    description = (
        "conditional GRU decoder (Nematus): GRU on y_{i-1}, attend from it, GRU on c_i, "
        "maxout readout"
    )

    def __init__(self, config: GRUDecoder.Config, **sizes_and_parts: Any) -> None:
        """``gru``'s arguments (:class:`~nmtkit.registry.Decoder`'s contract)."""
        super().__init__(config, **sizes_and_parts)
        d = config.hidden_size
        # GRU_1 is input_from_embed + hidden_to_gates; GRU_2 reads c_i through
        # input_from_context and s'_i through this:
        self.proposal_to_gates = nn.Linear(d, 3 * d)

    def init_paper_parameters(self, generator: torch.Generator | None = None) -> None:
        """Both transitions' recurrent matrices orthogonal, gate by gate (B.1)."""
        super().init_paper_parameters(generator)
        orthogonal_gates(self.proposal_to_gates.weight, self.hidden_size, generator=generator)

    def step_layers(self) -> tuple[nn.Linear, ...]:
        """``gru``'s step layers and GRU_2's recurrent one."""
        return (*super().step_layers(), self.proposal_to_gates)

    def _recur(self, embed_gates: Tensor, state: DecoderState) -> tuple[Tensor, Tensor, Tensor]:
        """One step from s_{i-1}: return s_i [B, D], c_i [B, C], alpha_i [B, S]."""
        hidden = state.hidden
        proposal = gru_transition(embed_gates, self.hidden_to_gates(hidden), hidden)  # s'_i
        attended = self.attention(proposal, state)
        context, weights = attended.context, attended.weights  # [B, C], [B, S]
        gates_h = self.proposal_to_gates(proposal)  # [B, 3D]
        hidden = gru_transition(self.input_from_context(context), gates_h, proposal)  # s_i
        return hidden, context, weights
