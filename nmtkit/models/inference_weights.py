"""A loaded model's weights made ready for one inference precision, in place: the one place that
maps a resolved precision (:func:`nmtkit.runtime.resolve_search_precision`) to what it needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from nmtkit.models.autocast_weights import cast_linear_weights
from nmtkit.models.embedding_products import fold_embedding_products
from nmtkit.models.packed_weights import pack_fp16
from nmtkit.models.quantization import quantize_int8
from nmtkit.runtime import DTYPES

if TYPE_CHECKING:
    from nmtkit.models.seq2seq import Seq2Seq


def prepare_weights(model: Seq2Seq, precision: str) -> list[str]:
    """Give ``model`` the weights that ``precision`` (resolved) searches with, in place; return
    the converted layers' names. First, at every precision, the decoder's products of the target
    embedding become one table (:func:`~nmtkit.models.embedding_products.fold_embedding_products`,
    in the search's dtype); then ``int8``: the decoder's linear layers in int8 (torchao);
    ``packed16``: the decoder's packed as fp16 for fbgemm; ``bf16``/``fp16``: every castable
    linear layer's weight cast once, as autocast would per batch; ``fp32``: nothing more. The
    model can no longer be trained or saved as an nmtkit checkpoint after any conversion."""
    table_dtype = DTYPES.get(precision, torch.float32)  # packed16 and int8 steps run in fp32
    folded = [f"decoder.{name}" for name in fold_embedding_products(model.decoder, table_dtype)]
    return folded + _convert_layers(model, precision)


def _convert_layers(model: Seq2Seq, precision: str) -> list[str]:
    if precision == "int8":
        return quantize_int8(model)
    if precision == "packed16":
        return [f"decoder.{name}" for name in pack_fp16(model.decoder)]
    if precision in DTYPES:
        return cast_linear_weights(model, DTYPES[precision])
    return []
