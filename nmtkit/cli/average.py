"""`nmtkit average`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmtkit.cli.app import Quiet, UserDirs, Verbose, app, setup, user_errors
from nmtkit.errors import ConfigError


@app.command()
@user_errors
def average(
    checkpoints: Annotated[
        list[Path],
        typer.Argument(
            metavar="CHECKPOINT...",
            help="Checkpoint files or model directories (their best.pt); with --last, the one "
            "model directory whose kept checkpoints to average.",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="A .pt file, or a model directory that gets best.pt and config.yaml.",
        ),
    ],
    last: Annotated[
        int | None,
        typer.Option(
            help="Average the N newest checkpoint_<update>.pt of the model directory "
            "(train.keep_last).",
        ),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(help="Replace an existing output checkpoint, or a model directory's best.pt."),
    ] = False,
    verbose: Verbose = 0,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Average the parameters of checkpoints of one model into one checkpoint."""
    from nmtkit.training.averaging import average_checkpoints, last_checkpoints

    setup(verbose=verbose, quiet=quiet, user_dirs=user_dir)
    paths: list[Path] = list(checkpoints)
    if last is not None:
        if len(checkpoints) != 1:
            raise ConfigError(
                f"--last takes one model directory, got {len(checkpoints)} paths",
                hint="list the checkpoints instead, without --last",
            )
        paths = last_checkpoints(checkpoints[0], last)
    average_checkpoints(paths, output, overwrite=overwrite)
