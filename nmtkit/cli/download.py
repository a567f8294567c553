"""`nmtkit download`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmtkit.cli.app import app, setup, user_errors


@app.command("download")
@user_errors
def download_multi30k(
    cache_dir: Annotated[
        Path | None,
        typer.Option(help="Where to keep it \\[default: $NMTKIT_CACHE or the user cache]."),
    ] = None,
) -> None:
    """Download Multi30k (en, de, fr) into the cache, checking SHA-256 sums; print its folder."""
    from nmtkit.download import download_multi30k

    setup()
    typer.echo(str(download_multi30k(cache_dir)))
