"""`nmtkit align`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmtkit.cli.app import (
    Device,
    ModelOpt,
    Quiet,
    Threads,
    UserDirs,
    app,
    setup,
    user_errors,
)


@app.command()
@user_errors
def align(
    model: ModelOpt,
    source: Annotated[Path, typer.Option(help="Source sentences, one a line.")],
    target: Annotated[Path, typer.Option(help="Their translations, one a line.")],
    output: Annotated[
        str, typer.Option("--output", help="Pharaoh output file ('-' for stdout).")
    ] = "-",
    soft: Annotated[
        bool, typer.Option(help="Write the word-level attention matrices as JSON lines instead.")
    ] = False,
    plot: Annotated[
        Path | None, typer.Option(help="Write one heatmap per pair into this folder.")
    ] = None,
    plot_format: Annotated[str, typer.Option(help="Heatmap format: png, svg or pdf.")] = "png",
    limit: Annotated[int | None, typer.Option(help="Only the first N pairs.")] = None,
    batch_size: Annotated[int, typer.Option(help="Sentence pairs per batch.")] = 64,
    device: Device = "cpu",
    threads: Threads = None,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Word alignments from attention: Pharaoh i-j lines, soft matrices, heatmap pictures."""
    from nmtkit.align import align_files

    setup(quiet=quiet, user_dirs=user_dir)
    align_files(
        model,
        source,
        target,
        output=output,
        soft=soft,
        plot_dir=plot,
        plot_format=plot_format,
        limit=limit,
        batch_size=batch_size,
        device=device,
        threads=threads,
    )
