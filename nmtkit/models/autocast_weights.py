"""bf16 (or fp16) translation without a weight cast per batch: the weights that autocast casts,
cast once.

Under ``torch.autocast`` a linear layer's fp32 weight and bias are cast to the low precision
whenever the layer first runs in an autocast region, and the cast is kept only until the region
ends. The search opens one region per batch, so a process that translates one sentence at a time
(``serve`` with one client) casts every weight of the model once a sentence: at beam 5 that was
a third of a sentence's time (docs/speed.md). Casting the same layers' parameters once, at load,
gives the products the very same inputs (a cast of a low-precision tensor is a no-op), so the
translations are bit for bit those of autocast over fp32 weights; only the time differs.

Left as they are: layers thinner than :data:`~nmtkit.models.quantization.MIN_WIDTH` (additive
attention reads v_a's fp32 weight itself, sum(v)), and a layer whose weight is also an
embedding table (tied or shared embeddings: autocast never casts an embedding lookup).
"""

from __future__ import annotations

import torch
from torch import nn

from nmtkit.models.quantization import MIN_WIDTH


def castable(layer: nn.Module, embedding_tables: set[int]) -> bool:
    """Whether :func:`cast_linear_weights` casts ``layer``."""
    return (
        isinstance(layer, nn.Linear)
        and min(layer.in_features, layer.out_features) >= MIN_WIDTH
        and layer.weight.dtype == torch.float32
        and id(layer.weight) not in embedding_tables
    )


@torch.no_grad()
def cast_linear_weights(model: nn.Module, dtype: torch.dtype) -> list[str]:
    """Give ``model``'s linear layers (:func:`castable`) their weight and bias in ``dtype``, in
    place, for inference under autocast to ``dtype`` only; return their names (none on a second
    call). The model can no longer be trained or saved as an nmtkit checkpoint."""
    tables = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    names = []
    for name, layer in model.named_modules():
        if castable(layer, tables):
            assert isinstance(layer, nn.Linear)
            layer.weight.data = layer.weight.data.to(dtype)
            if layer.bias is not None:
                layer.bias.data = layer.bias.data.to(dtype)
            names.append(name)
    return names
