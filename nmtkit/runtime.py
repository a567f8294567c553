"""Process-wide speed settings: the C allocator and the precision of matrix products.

Two things decide how fast an RNN model runs on a CPU besides its FLOPs (measured in
``benchmarks/speed.sh``; see docs/speed.md):

* **The allocator.** glibc hands blocks above its mmap threshold straight to the kernel and takes
  them back on free, so every batch's large tensors (the [tokens, vocabulary] logits and their
  gradients) arrive as fresh pages and pay a page fault per 4 KiB on first touch: zero-filling a
  2000 x 8000 float tensor took 39 ms instead of 3.5 ms here. :func:`tune_allocator` raises the
  thresholds so that freed memory is reused, as jemalloc or tcmalloc would.
* **Precision.** On a CPU with native bf16 (AVX512-BF16 or AMX) a bf16 matrix product runs
  several times faster than fp32. :func:`autocast` runs matrix products in bf16 and keeps
  everything else (the recurrent state's update, softmaxes, the loss) in fp32.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
from collections.abc import Iterator

import torch

from nmtkit.errors import unknown_name

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16")

_M_TRIM_THRESHOLD = -1  # glibc mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_THRESHOLD = 1 << 30  # 1 GiB: larger blocks still come from mmap
_tuned = False


def tune_allocator() -> bool:
    """Let glibc's malloc keep and reuse large freed blocks; return whether it applied.

    Does nothing on other platforms or C libraries, when ``NMTKIT_MALLOC=system`` is set, or on
    a second call. The process's resident memory then stays near its peak instead of shrinking
    between batches.
    """
    global _tuned
    if _tuned or not sys.platform.startswith("linux"):
        return _tuned
    if os.environ.get("NMTKIT_MALLOC", "").lower() == "system":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols, libc's among them
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _tuned = bool(mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _THRESHOLD)
    )
    log.debug("malloc thresholds raised to %d bytes: %s", _THRESHOLD, _tuned)
    return _tuned


def native_bf16(device: torch.device | str = "cpu") -> bool:
    """Whether ``device`` multiplies bf16 matrices natively (CPU: AVX512-BF16 or AMX)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    cpu = torch.cpu
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(cpu, name, lambda: False)() for name in checks)


def resolve_precision(precision: str, device: torch.device | str = "cpu") -> str:
    """``auto`` becomes ``bf16`` where the device has native bf16, else ``fp32``.

    Raises:
        ConfigError: an unknown precision.
    """
    if precision not in PRECISIONS:
        raise unknown_name("precision", precision, PRECISIONS)
    if precision == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    return precision


@contextlib.contextmanager
def autocast(precision: str, device: torch.device | str = "cpu") -> Iterator[None]:
    """Run matrix products in bf16 inside the block when ``precision`` (resolved) is bf16."""
    device = torch.device(device)
    if resolve_precision(precision, device) == "bf16":
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            yield
    else:
        yield
