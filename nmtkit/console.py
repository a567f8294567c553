"""The one rich console (stderr), logging set-up and the progress-bar factory."""

from __future__ import annotations

import logging
import sys

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

console = Console(stderr=True)
_quiet = False


def setup_logging(*, verbosity: int = 0, quiet: bool = False) -> None:
    """Send nmtkit's log records to the stderr console: -v for DEBUG, -q for warnings only."""
    global _quiet
    _quiet = quiet
    level = logging.WARNING if quiet else logging.DEBUG if verbosity > 0 else logging.INFO
    handler: logging.Handler
    if console.is_terminal:
        handler = RichHandler(console=console, show_path=False, show_time=True, markup=False)
        handler.setFormatter(logging.Formatter("%(message)s", datefmt="[%X]"))
    else:  # a file or a pipe (a scheduler's log): one unwrapped, greppable line per record
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            logging.Formatter("[%(asctime)s] %(levelname)s %(message)s", datefmt="%X")
        )
    root = logging.getLogger("nmtkit")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def progress(*fields: str, show: bool = True) -> Progress:
    """Return a progress bar on stderr; it draws nothing off a TTY, when quiet, or unless
    ``show`` (e.g. on the ranks of a data-parallel run other than rank 0).

    Args:
        fields: names of task fields shown after the bar (``"loss"`` shows ``fields['loss']``).
    """
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *(TextColumn(f"{name} {{task.fields[{name}]}}") for name in fields),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    return Progress(
        *columns,
        console=console,
        disable=_quiet or not show or not console.is_terminal,
        transient=False,
    )
