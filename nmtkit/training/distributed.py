"""Data-parallel training under torchrun: the launcher's environment, the process group, the
model's DistributedDataParallel wrapper and the few collectives training needs. The only module
that says ``torch.distributed``.

``torchrun --nproc-per-node N -m nmtkit train ...`` starts N processes with ``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set; :func:`session` joins
them into one process group (NCCL on CUDA, where rank r trains on ``cuda:LOCAL_RANK``; gloo on
the CPU). Without torchrun it yields a group of one that never communicates. A rank that dies or
hangs makes the others fail within ``NMTKIT_DIST_TIMEOUT`` seconds (600 by default) with one line
naming their rank.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from nmtkit.errors import ConfigError, DistributedError
from nmtkit.runtime import resolve_device

log = logging.getLogger(__name__)

TIMEOUT_ENV = "NMTKIT_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
# What the errors of gloo, NCCL and the c10d store say when a peer is gone or silent.
_COMM_WORDS = ("gloo", "nccl", "c10d", "connection", "timed out", "timeout", "peer")


@dataclass(frozen=True, kw_only=True)
class Distributed:
    """This process's place among the ranks; a group of one without torchrun."""

    device: torch.device  # where this rank trains
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    restarts: int = 0  # torchrun's elastic restarts so far (TORCHELASTIC_RESTART_COUNT)
    active: bool = False  # a process group is up

    @property
    def is_main(self) -> bool:
        """Rank 0, the one that logs, validates and writes."""
        return self.rank == 0

    def _tensor(self, values: Sequence[float]) -> torch.Tensor:
        comm = self.device if self.device.type == "cuda" else torch.device("cpu")
        return torch.tensor([float(v) for v in values], dtype=torch.float64, device=comm)

    def all_reduce(self, values: Sequence[float], *, op: str = "sum") -> list[float]:
        """``values`` summed (``op="sum"``) or maximized (``"max"``) over the ranks."""
        if not self.active:
            return [float(v) for v in values]
        tensor = self._tensor(values)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
        return [float(v) for v in tensor.tolist()]

    def broadcast(self, values: Sequence[float]) -> list[float]:
        """Rank 0's ``values``, on every rank."""
        if not self.active:
            return [float(v) for v in values]
        tensor = self._tensor(values)
        dist.broadcast(tensor, src=0)
        return [float(v) for v in tensor.tolist()]

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        if self.active:
            ids = [self.device.index] if self.device.type == "cuda" else None
            dist.barrier(device_ids=ids)

    def wrap(self, module: nn.Module) -> nn.Module:
        """``module`` in DistributedDataParallel (gradients averaged over the ranks in its
        backward), or ``module`` itself in a group of one."""
        if not self.active:
            return module
        ids = [self.device.index] if self.device.type == "cuda" else None
        return DistributedDataParallel(module, device_ids=ids, gradient_as_bucket_view=True)

    def no_sync(self, module: nn.Module, *, sync: bool) -> contextlib.AbstractContextManager[None]:
        """Around a micro-batch's forward and backward: unless ``sync`` (the last micro-batch of
        an update), keep its gradients local (DDP's ``no_sync``) instead of averaging them."""
        if sync or not isinstance(module, DistributedDataParallel):
            return contextlib.nullcontext()
        return module.no_sync()


class _RankName(logging.Filter):
    """Starts each log record of a rank other than 0 with ``rank N:``."""

    def __init__(self, rank: int) -> None:
        super().__init__()
        self.prefix = f"rank {rank}: "

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self.prefix):
            record.msg = self.prefix + str(record.msg)
        return True


def _int_env(environ: Mapping[str, str], name: str, default: int) -> int:
    try:
        return int(environ.get(name, default))
    except ValueError:
        raise ConfigError(
            f"{name}={environ[name]!r} is not a whole number", where="environment"
        ) from None


def timeout_seconds(environ: Mapping[str, str] = os.environ) -> float:
    """How long a rank waits for the others: ``NMTKIT_DIST_TIMEOUT`` seconds, else 600.

    Raises:
        ConfigError: not a positive number.
    """
    raw = environ.get(TIMEOUT_ENV)
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ConfigError(f"{TIMEOUT_ENV}={raw!r} must be a positive number of seconds")
    return seconds


def rank_device(device: torch.device, local_rank: int) -> torch.device:
    """The device a rank trains on: ``cuda`` becomes ``cuda:LOCAL_RANK``, the CPU stays.

    Raises:
        ConfigError: another GPU index than ``LOCAL_RANK``, or no such GPU.
    """
    if device.type != "cuda":
        return device
    if device.index is not None and device.index != local_rank:
        raise ConfigError(
            f"under torchrun rank {local_rank} of this machine trains on cuda:{local_rank}",
            where=f"--device {device}",
            hint="pass --device cuda",
        )
    return resolve_device(f"cuda:{local_rank}")


def is_comm_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a failed collective or rendezvous: a peer gone, silent or unreachable."""
    if isinstance(exc, dist.DistError):
        return True
    text = str(exc).lower()
    return type(exc) is RuntimeError and any(word in text for word in _COMM_WORDS)


def _reason(exc: BaseException) -> str:
    """The first sentence of a gloo/NCCL message, without its ``[file.cc:123]`` prefix."""
    text = " ".join(str(exc).split())
    text = re.sub(r"^\[[^\]]*:\d+\]\s*", "", text)
    return text.split(". ")[0].rstrip(".") or type(exc).__name__


@contextlib.contextmanager
def session(device: torch.device) -> Iterator[Distributed]:
    """Join the ranks torchrun started (its environment says which), or be a group of one.

    Inside, ranks other than 0 log only warnings and errors, and a failed collective (another
    rank died, or did not answer within ``NMTKIT_DIST_TIMEOUT``) becomes a
    :class:`DistributedError` naming this rank. The group is torn down on the way out.

    Raises:
        ConfigError: a bad ``NMTKIT_DIST_TIMEOUT``, launcher variable or device.
        DistributedError: the ranks could not meet, or one of them went away.
    """
    environ = os.environ  # init_process_group reads it too (env://)
    if "RANK" not in environ or "WORLD_SIZE" not in environ:
        yield Distributed(device=device)
        return
    rank, world = _int_env(environ, "RANK", 0), _int_env(environ, "WORLD_SIZE", 1)
    local_rank = _int_env(environ, "LOCAL_RANK", 0)
    timeout = timeout_seconds(environ)
    device = rank_device(device, local_rank)
    where = f"rank {rank} of {world}"
    hint = (
        f"another rank died or stopped answering, see that rank's log; ranks wait "
        f"{TIMEOUT_ENV}={timeout:g} seconds for each other"
    )
    if device.type == "cuda":
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    try:
        dist.init_process_group(
            backend, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=timeout)
        )
    except Exception as exc:
        if not is_comm_error(exc):
            raise
        address = f"{environ.get('MASTER_ADDR', '?')}:{environ.get('MASTER_PORT', '?')}"
        raise DistributedError(
            f"cannot meet the other ranks at {address} ({backend}): {_reason(exc)}",
            where=where,
            hint=hint,
        ) from None
    group = Distributed(
        device=device,
        rank=rank,
        local_rank=local_rank,
        world_size=world,
        restarts=_int_env(environ, "TORCHELASTIC_RESTART_COUNT", 0),
        active=True,
    )
    logger = logging.getLogger("nmtkit")
    level, handlers = logger.level, list(logger.handlers)
    name = _RankName(rank)
    if not group.is_main:  # rank 0 logs the run; the others only what goes wrong, named
        logger.setLevel(max(level, logging.WARNING))
        for handler in handlers:
            handler.addFilter(name)
    try:
        yield group
    except Exception as exc:
        if not is_comm_error(exc):
            raise
        raise DistributedError(
            f"lost contact with the other ranks: {_reason(exc)}", where=where, hint=hint
        ) from None
    finally:
        logger.setLevel(level)
        for handler in handlers:
            handler.removeFilter(name)
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
