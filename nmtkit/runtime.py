"""Process-wide settings: the torch device, the C allocator and the precision of matrix products.

:func:`resolve_device` turns a ``--device`` string into a device this machine has, or one error
line that says why not.

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

from nmtkit.errors import ConfigError, DataError, unknown_name

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16", "fp16")  # train.precision, search.precision
# Translation and alignment also take int8 (the decoder's linear layers get int8 weights through
# torchao: nmtkit.models.quantization) and packed16 (their weights packed as fp16 for fbgemm's
# GEMM, fp32 arithmetic: nmtkit.models.packed_weights); the rest of the model runs in fp32.
# Training can take neither.
INFERENCE_PRECISIONS = (*PRECISIONS, "int8", "packed16")

_M_TRIM_THRESHOLD = -1  # glibc mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_THRESHOLD = 1 << 30  # 1 GiB: larger blocks still come from mmap
_tuned = False


DEVICES = "cpu, cuda, cuda:N, mps, xpu"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def resolve_device(name: str | torch.device) -> torch.device:
    """The torch device ``name`` (``cpu``, ``cuda``, ``cuda:1``, ...), checked to exist here.

    Raises:
        ConfigError: an unknown device, one this torch build lacks, or an index past the last
            device, e.g. ``--device cuda: this torch build has no CUDA``.
    """
    where = f"--device {name}"
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ConfigError(f"unknown device; choose from {DEVICES}", where=where) from None
    if device.type == "cpu":
        return device
    if device.type == "cuda":
        if not torch.backends.cuda.is_built():
            raise ConfigError(
                "this torch build has no CUDA",
                where=where,
                hint="install a torch build with CUDA, or use --device cpu",
            )
        if not torch.cuda.is_available():
            raise ConfigError(
                "no CUDA GPU is visible",
                where=where,
                hint="check the driver and CUDA_VISIBLE_DEVICES",
            )
        count = torch.cuda.device_count()
    elif device.type == "mps":
        if not torch.backends.mps.is_available():
            raise ConfigError("no MPS (Apple GPU) device here", where=where)
        count = 1
    elif device.type == "xpu":
        xpu = getattr(torch, "xpu", None)
        if xpu is None or not xpu.is_available():
            raise ConfigError("no XPU (Intel GPU) device here", where=where)
        count = xpu.device_count()
    else:
        raise ConfigError(f"unsupported device type; choose from {DEVICES}", where=where)
    if device.index is not None and device.index >= count:
        last = f" to {device.type}:{count - 1}" if count > 1 else ""
        raise ConfigError(f"only {_plural(count, 'GPU')} here ({device.type}:0{last})", where=where)
    return device


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


ONEDNN_CACHE_VARIABLE = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
TRAINING_ONEDNN_CACHE = 64  # kernels kept (oneDNN's default is 1024)


def limit_kernel_cache(capacity: int = TRAINING_ONEDNN_CACHE) -> bool:
    """Keep at most ``capacity`` of oneDNN's compiled CPU kernels (primitives); return whether
    this call set the limit (not when the user has set ``ONEDNN_PRIMITIVE_CACHE_CAPACITY``).

    oneDNN compiles a kernel for every new matrix shape and keeps it, with its buffers, in a
    cache of 1024 by default. Training sees a new shape with almost every batch length, so the
    cache filled the process's memory for the whole run (3.0 GiB at update 200 and rising, 4.1
    GiB after 30 minutes); with 64 kept it stays at 1.6 GiB, with no speed difference measured
    beyond noise (docs/quality.md).
    oneDNN reads the variable when it makes its first kernel: call this before any matrix
    product of the process.
    """
    if ONEDNN_CACHE_VARIABLE in os.environ:
        return False
    os.environ[ONEDNN_CACHE_VARIABLE] = str(capacity)
    return True


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


def describe_device(device: torch.device | str = "cpu") -> str:
    """The device as figures should name it: on a CPU its vector instruction set as torch uses
    it and whether bf16 is native, e.g. ``cpu (AVX512, native bf16)`` or ``cpu (AVX2, no native
    bf16)``; the instruction set decides the speed of recurrent work, bf16 the default
    precision (:func:`resolve_precision`)."""
    device = torch.device(device)
    if device.type != "cpu":
        return str(device)
    bf16 = "native bf16" if native_bf16(device) else "no native bf16"
    return f"cpu ({torch.backends.cpu.get_cpu_capability()}, {bf16})"


def active_autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype that autocast gives matrix products on ``device_type`` now; None outside
    autocast."""
    if not torch.is_autocast_enabled(device_type):
        return None
    return torch.get_autocast_dtype(device_type)


def resolve_precision(precision: str, device: torch.device | str = "cpu") -> str:
    """``auto`` becomes ``bf16`` where the device has native bf16; else ``fp16`` on a CUDA GPU
    (training then scales the loss with a ``GradScaler``) and ``fp32`` anywhere else. Any other
    of :data:`INFERENCE_PRECISIONS` stays as it is (``int8`` is for translation and alignment:
    the configs accept only :data:`PRECISIONS`).

    Raises:
        ConfigError: an unknown precision.
    """
    if precision not in INFERENCE_PRECISIONS:
        raise unknown_name("precision", precision, INFERENCE_PRECISIONS)
    if precision == "auto":
        if native_bf16(device):
            return "bf16"
        return "fp16" if torch.device(device).type == "cuda" else "fp32"
    return precision


def packed16_available() -> bool:
    """Whether this torch build has fbgemm's fp16-weight GEMM (``packed16``): x86 builds do."""
    return "fbgemm" in torch.backends.quantized.supported_engines


def resolve_search_precision(precision: str, device: torch.device | str = "cpu") -> str:
    """:func:`resolve_precision` for a search over a model that no longer trains (translate,
    serve, score, align): ``auto`` becomes ``packed16`` on a CPU without native bf16 where
    fbgemm is there, since a step's few rows make its products read-bound (docs/speed.md).

    Raises:
        ConfigError: an unknown precision, or ``packed16`` where fbgemm is not.
    """
    resolved = resolve_precision(precision, device)
    on_cpu = torch.device(device).type == "cpu"
    if precision == "auto" and resolved == "fp32" and on_cpu and packed16_available():
        return "packed16"
    if resolved == "packed16" and not (on_cpu and packed16_available()):
        raise ConfigError(
            "precision packed16 needs fbgemm on a CPU, which this torch build or device lacks",
            hint="use --precision fp32 (or auto)",
        )
    return resolved


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@contextlib.contextmanager
def autocast(precision: str, device: torch.device | str = "cpu") -> Iterator[None]:
    """Run matrix products in bf16 or fp16 inside the block when ``precision`` (resolved) says
    so; fp32 and int8 (whose quantized layers ignore autocast) run the block as it is."""
    device = torch.device(device)
    dtype = DTYPES.get(resolve_precision(precision, device))
    if dtype is None:
        yield
        return
    with torch.autocast(device_type=device.type, dtype=dtype):
        yield


def available_memory() -> int | None:
    """Bytes this process may still take: the least of the kernel's MemAvailable, the cgroup's
    memory.max less its use, and the address-space limit (``ulimit -v``) less the process's
    size; None where none of them is known."""
    found = [_meminfo_available(), _cgroup_available(), _address_space_left()]
    known = [value for value in found if value is not None]
    return min(known) if known else None


def check_line_memory(need: int, *, what: str, size: str, hint: str) -> None:
    """Refuse a line whose attention matrices alone need more than :func:`available_memory`.

    Args:
        need: the bytes that the line's [T, S] matrices take (estimated by the caller).
        what: names the line, e.g. "input line 12".
        size: its length, e.g. "24000 source x 25000 target pieces".
        hint: the option that bounds the line.

    Raises:
        DataError: naming the line, its length, the memory it needs and the option.
    """
    if need < _UNCHECKED:  # every ordinary sentence: no /proc read per line
        return
    available = available_memory()
    if available is not None and need > available:
        raise DataError(
            f"{size}: its attention needs about {_gib(need)}, more than the "
            f"{_gib(available)} of memory available",
            where=what,
            hint=hint,
        )


_UNCHECKED = 64 * 2**20  # lines whose matrices need less than this are not checked


def _gib(num_bytes: int) -> str:
    return f"{num_bytes / 2**30:.1f} GiB"


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as stream:
            for line in stream:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available() -> int | None:
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as stream:
            limit = stream.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as stream:
            return int(limit) - int(stream.read().strip())
    except (OSError, ValueError):
        return None


def _address_space_left() -> int | None:
    try:
        import resource  # POSIX only
    except ImportError:
        return None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm", encoding="ascii") as stream:
            size = int(stream.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
    return limit - size
