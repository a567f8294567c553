"""fp16 weights packed for fbgemm, fp32 arithmetic: the decoder's linear layers for search on a CPU
without native bf16 (precision ``packed16``, Marian's name for the same GEMM).

A decoding step multiplies a few rows (the beam's hypotheses, a sentence at a time) by every
weight matrix of the decoder, so on a CPU its time goes to reading the weights, not to the
arithmetic: the default model's decoder holds 18 MB of fp32 weights, read once per step. fbgemm's
fp16 GEMM keeps each weight as fp16 in its own blocked layout (half the bytes) and converts it
to fp32 in registers, so the products are fp32 products of weights rounded to fp16 (11
significant bits; bf16 keeps 8). It is in every x86 build of torch (``torch.ops.quantized.
linear_prepack_fp16`` / ``linear_dynamic_fp16``) and needs nothing but AVX2. Measured beside
fp32 in docs/speed.md (``precision: auto`` takes it for search on a CPU without native bf16:
:func:`nmtkit.runtime.resolve_search_precision`).

Each converted layer keeps its fp32 ``weight`` and ``bias`` (the shortlist cuts rows of the
output layer's, tied embeddings share it, additive attention reads sum(v_a)), so only the
product changes. For inference only: the packed copy has no gradient and is not saved.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from nmtkit.models.quantization import MIN_WIDTH


class PackedFP16Linear(nn.Linear):
    """``layer``'s product with its weight (and bias) packed as fp16 for fbgemm; the input and
    output stay fp32. ``weight`` and ``bias`` are ``layer``'s own parameters, unchanged, so it
    is still the ``nn.Linear`` that code reading them expects."""

    def __init__(self, layer: nn.Linear) -> None:
        nn.Module.__init__(self)  # not nn.Linear's: it would allocate a weight of its own
        self.in_features = layer.in_features
        self.out_features = layer.out_features
        self.weight = layer.weight
        self.bias = layer.bias
        bias = None if layer.bias is None else layer.bias.detach().float()
        self._packed = torch.ops.quantized.linear_prepack_fp16(layer.weight.detach().float(), bias)

    def forward(self, x: Tensor) -> Tensor:  # [..., in] -> [..., out]
        return torch.ops.quantized.linear_dynamic_fp16(x.float(), self._packed)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, fp16 packed"


def packable(layer: nn.Module) -> bool:
    """Whether :func:`pack_fp16` converts ``layer``: an fp32 ``nn.Linear`` on the CPU at least
    :data:`~nmtkit.models.quantization.MIN_WIDTH` wide both ways (v_a, one row, gains nothing)."""
    return (
        type(layer) is nn.Linear
        and min(layer.in_features, layer.out_features) >= MIN_WIDTH
        and layer.weight.dtype == torch.float32
        and layer.weight.device.type == "cpu"
    )


@torch.no_grad()
def pack_fp16(module: nn.Module) -> list[str]:
    """Replace ``module``'s packable linear layers (:func:`packable`) by
    :class:`PackedFP16Linear`, in place, for inference only; return their names (none on a
    second call)."""
    found = [(name, layer) for name, layer in module.named_modules() if packable(layer)]
    for name, layer in found:
        assert isinstance(layer, nn.Linear)
        module.set_submodule(name, PackedFP16Linear(layer))
    return [name for name, _ in found]
