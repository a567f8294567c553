"""The GRU encoder's training pass, step by step: what torch's ``nn.GRU`` computes on a packed
batch, from its own parameters, in larger matrix products.

On a packed batch, ``nn.GRU`` on a CPU takes both the input's and the state's share of the
gates step by step, in products as thin as the step's batch, and autograd takes their weight
gradients one step at a time. Here the input's share comes for every word of every sentence in
one product, [B*S, E] x [E, 3H], and the state's share step by step with its weight gradients
deferred to one product (:mod:`nmtkit.models.deferred_grads`). A padded position leaves the
state as it was and gives a zero output, as packing does, so each direction reads a sentence's
own words alone: the same annotations and final states as ``nn.GRU``, to rounding.

Training in fp32 only (gradients on, no autocast, one layer): elsewhere ``nn.GRU`` runs. Under
bf16 autocast the steps work too (the gate products in bf16, the recurrent weights cast once a
forward pass; the gates and the state fp32), and tests keep them near ``nn.GRU``, but they gave
no speed there: 0.99x of ``nn.GRU`` on an AVX-512 CPU (docs/speed.md, fourteenth round).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmtkit.models.decoders import gru_transition
from nmtkit.models.deferred_grads import DeferredLinear


def runs_in_steps(rnn: nn.Module, embedded: Tensor) -> bool:
    """Whether :func:`gru_in_steps` serves ``rnn`` on ``embedded`` now."""
    return (
        isinstance(rnn, nn.GRU)
        and rnn.num_layers == 1
        and rnn.batch_first
        and torch.is_grad_enabled()
        and not torch.is_autocast_enabled(embedded.device.type)
    )


def gru_in_steps(rnn: nn.GRU, embedded: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """``rnn`` (one layer, batch first, one or two directions) over ``embedded`` [B, S, E]
    with ``lengths`` [B]: outputs [B, S, dirs*H] (zero past each length) and final states
    [dirs, B, H], as ``nn.GRU`` gives them for the packed batch."""
    steps = embedded.size(1)
    valid = torch.arange(steps, device=embedded.device) < lengths.to(embedded.device)[:, None]
    valid = valid[..., None]  # [B, S, 1]
    suffixes = ["", "_reverse"] if rnn.bidirectional else [""]
    outputs, finals = [], []
    for suffix in suffixes:
        gates_in = F.linear(  # [B, S, 3H]: every step's input share in one product
            embedded, getattr(rnn, f"weight_ih_l0{suffix}"), getattr(rnn, f"bias_ih_l0{suffix}")
        )
        hidden_gates = DeferredLinear(
            getattr(rnn, f"weight_hh_l0{suffix}"), getattr(rnn, f"bias_hh_l0{suffix}")
        )
        order = range(steps) if suffix == "" else range(steps - 1, -1, -1)
        # unbind: one stacked gradient in the backward, not a zero-filled one per slice
        inputs, masks = gates_in.unbind(dim=1), valid.unbind(dim=1)
        state = embedded.new_zeros(embedded.size(0), rnn.hidden_size)  # [B, H]
        states: list[Tensor] = [state] * steps
        for t in order:
            new = gru_transition(inputs[t], hidden_gates(state), state)
            state = torch.where(masks[t], new, state)  # a pad leaves the state as it was
            states[t] = state
        outputs.append(torch.stack(states, dim=1) * valid)  # [B, S, H], zero at pads
        finals.append(state)
    return torch.cat(outputs, dim=-1), torch.stack(finals)
