"""Parameter initialization (``model.init``): uniform(-s, s), or the scheme of Bahdanau et al.
(2015, appendix B.1) with each component setting its own special parts."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from nmtkit.registry import Component

PAPER_STD = 0.01  # B.1: "any other weight matrix" ~ N(0, 0.01^2)


def initialize(
    model: nn.Module, *, scheme: str, scale: float, generator: torch.Generator | None = None
) -> None:
    """Draw every parameter of ``model`` by ``scheme``, then let each component set its parts.

    ``uniform``: every parameter ~ uniform(-scale, scale). ``paper``: every matrix ~
    N(0, 0.01^2) and every vector (the biases) 0, then
    :meth:`~nmtkit.registry.Component.init_paper_parameters` (orthogonal recurrent matrices,
    the alignment model's W_a, U_a and v_a). Either way
    :meth:`~nmtkit.registry.Component.init_parameters` comes last.
    """
    components = [module for module in model.modules() if isinstance(module, Component)]
    with torch.no_grad():
        for param in model.parameters():
            if scheme == "uniform":
                param.uniform_(-scale, scale, generator=generator)
            elif param.dim() < 2:
                param.zero_()
            else:
                param.normal_(0.0, PAPER_STD, generator=generator)
        if scheme == "paper":
            for component in components:
                component.init_paper_parameters(generator)
        for component in components:
            component.init_parameters()


def orthogonal_gates(
    weight: Tensor, hidden_size: int, *, generator: torch.Generator | None = None
) -> None:
    """Make each gate's recurrent matrix orthogonal: ``weight`` [G*H, H] stacks G blocks [H, H]
    (GRU: r, z, n; LSTM: i, f, g, o), and each becomes a random orthogonal matrix (B.1)."""
    with torch.no_grad():
        for block in weight.split(hidden_size, dim=0):
            nn.init.orthogonal_(block, generator=generator)
