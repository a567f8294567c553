"""What the CLI tests share: the size of the tiny run, in-process invocation, a run's record."""

from __future__ import annotations

import json
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


def translate_jsonl(cli: Invoke, model_dir: Path, lines: list[str], *flags: str) -> list[dict]:
    """``nmtkit translate --output-format jsonl`` of ``lines`` on one thread, as records."""
    args = ["translate", "-m", str(model_dir), "--output-format", "jsonl", "--threads", "1"]
    result = cli([*args, *flags], input="".join(f"{line}\n" for line in lines))
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]
