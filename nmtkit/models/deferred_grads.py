"""Weight gradients of a recurrence's per-step products, taken in one matrix product at the end.

Teacher forcing calls the same linear layers at every target step (the GRU's recurrent gates,
the context's share of them). Autograd's backward then takes each weight's gradient as T small
products, [out, B] x [B, in] with B the sentences of a batch, and adds them up one at a time:
T products too thin to run near the CPU's peak, and T additions of a whole [out, in] matrix.
Inside :func:`deferred_weight_grads`, each step's product records its input and the gradient of
its output instead, and the weight's gradient (and the bias's) is taken once, when the backward
pass is through with every step: one [out, T*B] x [T*B, in] product, the same sum. The forward
is the same ``F.linear``, so the loss is the same number.

fp32 only: under autocast (bf16 training) the layers run as they are, because their weights'
casts, cached once a forward for parameters, would be taken again at every step.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _Record:
    """What a layer's steps leave for its weight gradient: their inputs and output gradients."""

    __slots__ = ("grads", "inputs")

    def __init__(self) -> None:
        self.inputs: list[Tensor] = []  # [B, in] each
        self.grads: list[Tensor] = []  # [B, out] each


class _Gate(torch.autograd.Function):
    """The layer's parameters as the steps see them (views): its backward runs after every
    step's and turns their records into the parameters' gradients."""

    @staticmethod
    def forward(ctx: Any, record: _Record, *params: Tensor) -> tuple[Tensor, ...]:
        ctx.record = record
        ctx.set_materialize_grads(False)
        return tuple(param.view_as(param) for param in params)

    @staticmethod
    def backward(ctx: Any, *direct: Tensor | None) -> tuple[Tensor | None, ...]:
        record: _Record = ctx.record
        if not record.grads:  # no step was differentiated
            return (None, *direct)
        grads, inputs = torch.cat(record.grads), torch.cat(record.inputs)  # [N, out], [N, in]
        record.grads.clear()
        record.inputs.clear()
        summed = [grads.t() @ inputs, grads.sum(dim=0)][: len(direct)]  # weight, bias
        return (None, *(s if d is None else s + d for s, d in zip(summed, direct, strict=True)))


class _StepLinear(torch.autograd.Function):
    """``F.linear`` whose weight and bias gradients go to the layer's record, not to autograd."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, record: _Record, weight: Tensor, bias: Tensor | None
    ) -> Tensor:
        ctx.record = record
        ctx.save_for_backward(x, weight)
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None]:
        x, weight = ctx.saved_tensors
        ctx.record.inputs.append(x)
        ctx.record.grads.append(grad)
        grad_x = grad @ weight if ctx.needs_input_grad[0] else None
        return grad_x, None, None, None


class DeferredLinear:
    """``F.linear`` with ``weight`` and ``bias`` for the steps of one forward pass, their
    gradients taken in one product at the end of the backward pass (module docstring).

    Make one per forward pass and call it on every step's [B, in] input; for fp32 without
    autocast (:func:`deferrable`)."""

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        self.record = _Record()
        views = _Gate.apply(self.record, *((weight,) if bias is None else (weight, bias)))
        self.weight, self.bias = views[0], (views[1] if len(views) > 1 else None)

    def __call__(self, x: Tensor) -> Tensor:
        out: Tensor = _StepLinear.apply(x, self.record, self.weight, self.bias)
        return out


def deferrable(device: torch.device | str) -> bool:
    """Whether a forward pass on ``device`` now would defer: gradients on, no autocast."""
    device_type = torch.device(device).type
    return torch.is_grad_enabled() and not torch.is_autocast_enabled(device_type)


@contextmanager
def deferred_weight_grads(*layers: nn.Linear) -> Iterator[None]:
    """Within the block, calls of ``layers`` on [B, in] inputs leave their weight gradients to
    one product at the end of the backward pass (module docstring). Does nothing without
    gradients or under autocast."""
    if not layers or not deferrable(layers[0].weight.device):
        yield
        return
    for layer in layers:
        layer.forward = DeferredLinear(layer.weight, layer.bias)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        for layer in layers:
            del layer.forward
