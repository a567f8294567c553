"""The target embedding's products, made once per model: a decoder step's E y_{i-1} times W (the
GRU input gates' y part, the readout's V_o) becomes a lookup of row y_{i-1} of E W^T.

A GRU decoder step multiplies the previous word's embedding by two matrices, [E, 3D] (with its
bias) and [E, 2M]. Both products depend on the word alone, so over a vocabulary of V words there
are only V of each: folded into one table [V, 3D + 2M] at load, a step reads B rows of it
instead of multiplying [B, E] by both matrices, which for the default model is about a tenth of
a batched step's arithmetic and of the weights a one-sentence step reads (docs/speed.md).

:func:`fold_embedding_products` swaps the decoder's ``embed`` for a :class:`FoldedEmbedding`
(the table) and the two layers for :class:`TableColumns` (their columns of the looked-up rows),
in place; the decoder's code is unchanged, since ``input_from_embed(embed(y))`` and
``readout_embed(embed(y))`` still compute E_y W^T + b. The embedding itself is no longer looked
up: nothing else in a step reads it. For inference only (no gradient, dropout is the identity),
and only where the table stays small (:data:`MAX_TABLE_BYTES`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F

# The limit holds up to 40,329 words with the default decoder (3D + 2M = 1,664 columns, 6.5 KiB
# a row in fp32); larger vocabularies keep their products.
MAX_TABLE_BYTES = 1 << 28  # 256 MiB

# The layers whose products are folded, in table order; each reads the target embedding only.
FOLDED_LAYERS = ("input_from_embed", "readout_embed")


class FoldedEmbedding(nn.Module):
    """Rows of [E W_1^T + b_1; E W_2^T + b_2; ...] for the token ids given: [..., sum of widths].
    Inference only: there is no embedding left to train or to drop out."""

    table: Tensor  # [V, sum of widths]

    def __init__(self, embed: nn.Embedding, layers: list[nn.Linear], dtype: torch.dtype) -> None:
        super().__init__()
        weight = embed.weight.detach().float()  # [V, E]
        parts = [
            F.linear(weight, layer.weight.detach().float(), _float_or_none(layer.bias))
            for layer in layers
        ]  # [V, out] each
        self.register_buffer("table", torch.cat(parts, dim=1).to(dtype), persistent=False)

    def forward(self, tokens: Tensor) -> Tensor:  # [...] -> [..., width]
        if self.training:
            raise RuntimeError("a folded embedding is for inference only")
        return F.embedding(tokens, self.table)

    def extra_repr(self) -> str:
        return f"rows={self.table.size(0)}, width={self.table.size(1)}, dtype={self.table.dtype}"


class TableColumns(nn.Module):
    """A folded linear layer: its ``width`` columns from ``start`` of the folded rows."""

    def __init__(self, start: int, width: int) -> None:
        super().__init__()
        self.start, self.width = start, width

    def forward(self, rows: Tensor) -> Tensor:  # [..., table width] -> [..., width]
        return rows.narrow(-1, self.start, self.width)

    def extra_repr(self) -> str:
        return f"columns {self.start}..{self.start + self.width - 1} of the folded embedding"


def foldable(decoder: nn.Module) -> bool:
    """Whether :func:`fold_embedding_products` folds ``decoder``: it has a target embedding and
    both plain linear layers that read it, and the table fits :data:`MAX_TABLE_BYTES` in fp32."""
    embed = getattr(decoder, "embed", None)
    layers = [getattr(decoder, name, None) for name in FOLDED_LAYERS]
    if type(embed) is not nn.Embedding or not all(type(m) is nn.Linear for m in layers):
        return False
    width = sum(m.out_features for m in layers if isinstance(m, nn.Linear))
    return embed.num_embeddings * width * 4 <= MAX_TABLE_BYTES


@torch.no_grad()
def fold_embedding_products(decoder: nn.Module, dtype: torch.dtype = torch.float32) -> list[str]:
    """Fold the products of ``decoder``'s target embedding into one table of ``dtype`` (see the
    module's doc), in place, if :func:`foldable`; return the names of the layers folded (none on
    a second call). The output layer keeps its own weight, tied to the embedding or not."""
    if not foldable(decoder):
        return []
    embed = decoder.embed
    assert isinstance(embed, nn.Embedding)  # foldable says so
    layers = [getattr(decoder, name) for name in FOLDED_LAYERS]
    folded = FoldedEmbedding(embed, layers, dtype)
    folded.train(decoder.training)  # a loaded model is in eval mode; a training one will refuse
    decoder.embed = folded
    start = 0
    for name, layer in zip(FOLDED_LAYERS, layers, strict=True):
        setattr(decoder, name, TableColumns(start, layer.out_features))
        start += layer.out_features
    return list(FOLDED_LAYERS)


def _float_or_none(bias: Tensor | None) -> Tensor | None:
    return None if bias is None else bias.detach().float()
