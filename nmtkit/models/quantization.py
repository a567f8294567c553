"""Int8 weights for translation and alignment: the decoder's linear layers, through torchao.

Each weight becomes int8 with one scale per output row, and each input row is quantized to int8
as it arrives (torchao's ``Int8DynamicActivationInt8WeightConfig``), so that the products run as
int8 x int8 -> int32 (``torch._int_mm``). It runs eagerly: ``torch.compile`` would fuse
torchao's rescaling, but compiles for about 30 s in every process. Speed and BLEU beside fp32 and
bf16: docs/speed.md.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from torch import nn

from nmtkit.errors import ConfigError

if TYPE_CHECKING:  # Seq2Seq asks has_int8_weight, so this module cannot import it at run time
    from nmtkit.models.seq2seq import Seq2Seq

log = logging.getLogger(__name__)

# Thinner layers stay fp32: a [*, A] x [A, 1] product (the attention's v_a) gains nothing from
# int8, and additive attention reads v_a's weight itself (sum(v)), which a quantized one lacks.
MIN_WIDTH = 16

# Importing torchao on a CPU-only torch warns that its CUDA kernels do not load, and torch that
# torchao registers an enum the old way: nothing a translation can act on.
_NOISY_LOGGERS = ("torchao", "torch.utils._pytree")

# The attribute quantize_int8 sets to True on each layer it gives int8 weights: such a layer
# computes its product, but has no float rows to cut (a shortlist) or train.
INT8_WEIGHT = "int8_weight"


def has_int8_weight(layer: nn.Module) -> bool:
    """Whether :func:`quantize_int8` gave ``layer`` int8 weights."""
    return bool(getattr(layer, INT8_WEIGHT, False))


def quantizable(module: nn.Module, name: str = "") -> bool:
    """Whether :func:`quantize_int8` converts ``module``: a linear layer at least
    :data:`MIN_WIDTH` wide both ways that it has not converted yet. (``name`` completes the
    signature of torchao's ``filter_fn``.)"""
    return (
        isinstance(module, nn.Linear)
        and min(module.in_features, module.out_features) >= MIN_WIDTH
        and not has_int8_weight(module)
    )


def quantize_int8(model: Seq2Seq) -> list[str]:
    """Give the decoder's linear layers int8 weights in place, for inference only; return
    their names (none on a second call).

    Only the decoder is quantized: it runs once per output piece and beam hypothesis, the
    encoder once per sentence (and its recurrent layers are not linear layers). The products
    outside these layers (attention over the annotations, the encoder) stay fp32. A quantized
    model can no longer be trained or saved as an nmtkit checkpoint.

    Raises:
        ConfigError: torchao is not installed.
    """
    with _torchao_import():
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
        from torchao.utils import should_reduce_range
    device = next(model.parameters()).device
    found = [name for name, m in model.decoder.named_modules() if quantizable(m)]
    config = Int8DynamicActivationInt8WeightConfig(
        reduce_range=should_reduce_range(device),  # without VNNI, u8 x s8 pair sums saturate
        set_inductor_config=False,  # nothing is compiled: leave torch's global settings alone
    )
    quantize_(model.decoder, config, filter_fn=quantizable)
    for name in found:
        setattr(model.decoder.get_submodule(name), INT8_WEIGHT, True)
    names = [f"decoder.{name}" for name in found]
    log.debug("int8 weights: %s", ", ".join(names) or "none")
    return names


@contextlib.contextmanager
def _torchao_import() -> Iterator[None]:
    """Import torchao inside the block with its import-time warnings held back; its absence
    becomes a ConfigError that says what to install."""
    loggers = [logging.getLogger(name) for name in _NOISY_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    except ImportError:
        raise ConfigError(
            "precision int8 needs torchao, which is not installed",
            hint="pip install torchao, or pip install 'nmtkit[int8]'",
        ) from None
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
