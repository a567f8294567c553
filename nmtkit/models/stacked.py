"""Linear layers that read the same input, run as one matrix product.

A decoder step multiplies s_{i-1} by the GRU's recurrent matrices and by the attention's query
projection, c_i by two matrices (GRU input gates, readout) and E y_{i-1} by two more. Each product
is small (a few hundred rows), so stacking the matrices of one input into a single product
saves a pass over the input and a kernel launch per layer. The layers keep their own
parameters: checkpoints, initialization and optimizers see no difference.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class StackedLinear:
    """``layers`` (reading the same input) as one product: ``stacked(x)`` is
    ``[layer(x) for layer in layers]``.

    The stacked weight is built afresh wherever autograd records (so gradients reach every
    layer), and kept between calls otherwise (a search's steps), until a weight changes. Under
    autocast it is built in the autocast dtype, so that no step casts it again. A layer whose
    weight is not a plain parameter (int8, :mod:`nmtkit.models.quantization`) runs on its own.

    Not a module: the layers stay where they are registered, and appear once in a state dict.
    """

    def __init__(self, layers: Sequence[nn.Linear]) -> None:
        self.layers = tuple(layers)
        self.sizes = [layer.out_features for layer in self.layers]
        self._kept: tuple[tuple[int, ...], torch.dtype | None, Tensor, Tensor | None] | None = None

    def __call__(self, x: Tensor) -> list[Tensor]:
        if len(self.layers) == 1 or not all(
            type(layer.weight) is nn.Parameter for layer in self.layers
        ):
            return [layer(x) for layer in self.layers]
        weight, bias = self._weights(x.device.type)
        return list(F.linear(x, weight, bias).split(self.sizes, dim=-1))

    def _weights(self, device_type: str) -> tuple[Tensor, Tensor | None]:
        dtype = (
            torch.get_autocast_dtype(device_type)
            if torch.is_autocast_enabled(device_type)
            else None
        )
        if torch.is_grad_enabled():
            return self._stack(dtype)
        versions = tuple(v for layer in self.layers for v in _versions(layer))
        kept = self._kept
        if kept is None or kept[0] != versions or kept[1] != dtype:
            kept = (versions, dtype, *self._stack(dtype))
            self._kept = kept
        return kept[2], kept[3]

    def _stack(self, dtype: torch.dtype | None) -> tuple[Tensor, Tensor | None]:
        """[W_1; ...; W_n] [sum out, in] and their biases (zeros where a layer has none)."""
        weight = torch.cat([layer.weight for layer in self.layers])
        biases = [layer.bias for layer in self.layers]
        bias = None
        if any(b is not None for b in biases):
            bias = torch.cat(
                [
                    layer.weight.new_zeros(layer.out_features) if b is None else b
                    for layer, b in zip(self.layers, biases, strict=True)
                ]
            )
        if dtype is not None:
            weight = weight.to(dtype)
            bias = None if bias is None else bias.to(dtype)
        return weight, bias


def _versions(layer: nn.Linear) -> tuple[int, ...]:
    """What identifies a layer's current weights: the tensors and their in-place versions."""
    tensors = [layer.weight] if layer.bias is None else [layer.weight, layer.bias]
    # An inference tensor has no version counter (and cannot change outside inference mode).
    return tuple(v for t in tensors for v in (id(t), -1 if t.is_inference() else t._version))
