"""Weight gradients of a recurrence's per-step products, taken in one matrix product at the end.

Teacher forcing calls the same linear layers at every target step (the GRU's recurrent gates,
the context's share of them). Autograd's backward then takes each weight's gradient as T small
products, [out, B] x [B, in] with B the sentences of a batch, and adds them up one at a time:
T products too thin to run near the CPU's peak, and T additions of a whole [out, in] matrix.
Inside :func:`deferred_weight_grads`, each step's product records its input and the gradient of
its output instead, and the weight's gradient (and the bias's) is taken once, when the backward
pass is through with every step: one [out, T*B] x [T*B, in] product, the same sum. The forward
is the same ``F.linear``, so the loss is the same number.

Under bf16 autocast (training on a CPU with native bf16), the weight and bias are cast to bf16
once a forward pass, as autocast's own cache does, and the steps' products run in bf16; the
recorded inputs and output gradients are bf16, so the one product at the end rounds its fp32
sum once, where autograd would add T bf16 step gradients of the cached cast in bf16. Under fp16
autocast (a GPU, with loss scaling), never measured, the layers run as they are.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmtkit.runtime import active_autocast_dtype


class _Record:
    """What a layer's steps leave for its weight gradient: their inputs and output gradients."""

    __slots__ = ("grads", "inputs")

    def __init__(self) -> None:
        self.inputs: list[Tensor] = []  # [B, in] each
        self.grads: list[Tensor] = []  # [B, out] each


class _Gate(torch.autograd.Function):
    """The layer's parameters as the steps see them (views, or copies in ``dtype``): its
    backward runs after every step's and turns their records into the parameters' gradients."""

    @staticmethod
    def forward(
        ctx: Any, record: _Record, dtype: torch.dtype | None, *params: Tensor
    ) -> tuple[Tensor, ...]:
        ctx.record = record
        ctx.dtypes = [param.dtype for param in params]
        ctx.set_materialize_grads(False)
        return tuple(
            param.view_as(param) if dtype in (None, param.dtype) else param.to(dtype)
            for param in params
        )

    @staticmethod
    def backward(ctx: Any, *direct: Tensor | None) -> tuple[Tensor | None, ...]:
        record: _Record = ctx.record
        if not record.grads:  # no step was differentiated
            return (None, None, *_cast(direct, ctx.dtypes))
        grads, inputs = torch.cat(record.grads), torch.cat(record.inputs)  # [N, out], [N, in]
        record.grads.clear()
        record.inputs.clear()
        summed = [grads.t() @ inputs, grads.sum(dim=0)][: len(direct)]  # weight, bias
        total = [s if d is None else s + d for s, d in zip(summed, direct, strict=True)]
        return (None, None, *_cast(total, ctx.dtypes))


def _cast(grads: Any, dtypes: list[torch.dtype]) -> list[Tensor | None]:
    """Each gradient in its parameter's dtype (the low-precision copies' come back to fp32)."""
    return [g if g is None else g.to(dtype) for g, dtype in zip(grads, dtypes, strict=True)]


class _StepLinear(torch.autograd.Function):
    """``F.linear`` whose weight and bias gradients go to the layer's record, not to autograd."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, record: _Record, weight: Tensor, bias: Tensor | None
    ) -> Tensor:
        ctx.record, ctx.x_dtype = record, x.dtype
        x = x.to(weight.dtype)  # under autocast: the step's input in the weights' precision
        ctx.save_for_backward(x, weight)
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None]:
        x, weight = ctx.saved_tensors
        grad = grad.to(weight.dtype)
        ctx.record.inputs.append(x)
        ctx.record.grads.append(grad)
        grad_x = (grad @ weight).to(ctx.x_dtype) if ctx.needs_input_grad[0] else None
        return grad_x, None, None, None


class DeferredLinear:
    """``F.linear`` with ``weight`` and ``bias`` for the steps of one forward pass, their
    gradients taken in one product at the end of the backward pass (module docstring).

    Make one per forward pass where :func:`deferrable`, and call it on every step's [B, in]
    input; under bf16 autocast the parameters are cast once, here."""

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        self.record = _Record()
        dtype = active_autocast_dtype(weight.device.type)
        params = (weight,) if bias is None else (weight, bias)
        views = _Gate.apply(self.record, dtype, *params)
        self.weight, self.bias = views[0], (views[1] if len(views) > 1 else None)

    def __call__(self, x: Tensor) -> Tensor:
        out: Tensor = _StepLinear.apply(x, self.record, self.weight, self.bias)
        return out


def deferrable(device: torch.device) -> bool:
    """Whether a forward pass on ``device`` now would defer: gradients on, fp32 or bf16."""
    return torch.is_grad_enabled() and active_autocast_dtype(device.type) in (None, torch.bfloat16)


@contextmanager
def deferred_weight_grads(*layers: nn.Linear) -> Iterator[None]:
    """Within the block, calls of ``layers`` on [B, in] inputs leave their weight gradients to
    one product at the end of the backward pass (module docstring). Does nothing without
    gradients or under fp16 autocast."""
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
