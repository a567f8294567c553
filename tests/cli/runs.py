"""What the CLI tests share: the size of the tiny run, in-process invocation, a run's record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner, Result

from nmtkit.cli import app

NUM_TRAIN = 300  # training pairs cut from Multi30k train
NUM_VALID = 50  # validation pairs cut from Multi30k val
NUM_UPDATES = 20  # updates of the tiny model, validated once at the end

Invoke = Callable[..., Result]


@dataclass(frozen=True)
class Run:
    """A folder a command wrote, with the command's captured result."""

    path: Path
    result: Result


def invoke(args: list[str], *, input: str | bytes | None = None, debug: bool = False) -> Result:
    """Run ``nmtkit ARGS`` in-process; stdout and stderr are captured apart.

    NMTKIT_DEBUG is unset (or set, with ``debug``) whatever the calling shell says.
    """
    env = {"NMTKIT_DEBUG": "1" if debug else None}
    return CliRunner().invoke(app, args, input=input, env=env, prog_name="nmtkit")
