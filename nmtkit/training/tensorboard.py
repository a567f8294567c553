"""``train.tensorboard``: the records of ``metrics.jsonl`` also as TensorBoard scalars.

Each record, exactly as it is appended to ``metrics.jsonl``, becomes one scalar per numeric field,
tagged ``KIND/FIELD`` (``train/loss``, ``train/lr``, ``valid/bleu``: a ``val_`` prefix is dropped,
the kind says it) at the record's ``step``; strings, None and booleans are left out, and a mapping
of numbers (a search record's ``tried``) gives ``KIND/FIELD/KEY``. ``metrics.jsonl`` stays the
source of truth: the writer sees nothing else.

A resumed run appends to the same log directory with ``purge_step`` one past the update it
resumes, so that TensorBoard hides what a killed run logged after that save; a fresh run purges
from step 0, hiding what a run it replaces (``--overwrite``) wrote there. The ``tensorboard``
package is an optional extra, imported only here and only when asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from nmtkit.errors import ConfigError

EXTRA_HINT = "pip install 'nmtkit[tensorboard]'"


def check_installed() -> None:
    """Raise ConfigError naming the extra when TensorBoard is missing."""
    try:
        import tensorboard  # noqa: F401
        import torch.utils.tensorboard  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"{exc.name or 'tensorboard'} is needed for train.tensorboard (--tensorboard)",
            hint=EXTRA_HINT,
        ) from None


def scalars(record: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    """The ``(tag, value)`` scalars of one ``metrics.jsonl`` record, in its order."""
    kind = str(record.get("kind", "record"))
    for key, value in record.items():
        if key in ("kind", "step"):
            continue
        yield from _numbers(f"{kind}/{key.removeprefix('val_')}", value)


def _numbers(tag: str, value: Any) -> Iterator[tuple[str, float]]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield tag, float(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _numbers(f"{tag}/{key}", item)


class TensorBoardLog:
    """A ``SummaryWriter`` on ``log_dir`` that writes whole ``metrics.jsonl`` records, flushed
    after each one (as ``metrics.jsonl`` is), so that TensorBoard is never behind the file.

    Args:
        log_dir: the TensorBoard log directory (made if missing).
        purge_step: TensorBoard hides the events already in ``log_dir`` at this step and later.

    Raises:
        ConfigError: the ``tensorboard`` extra is not installed.
    """

    def __init__(self, log_dir: Path, *, purge_step: int) -> None:
        check_installed()
        from torch.utils.tensorboard import SummaryWriter

        self.log_dir = Path(log_dir)
        self._writer = SummaryWriter(str(self.log_dir), purge_step=purge_step)

    def write(self, record: Mapping[str, Any]) -> None:
        """Add the record's scalars at its ``step``."""
        step = int(record["step"])
        for tag, value in scalars(record):
            self._writer.add_scalar(tag, value, global_step=step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
