"""`nmtkit shortlist`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmtkit.cli.app import ModelOpt, Quiet, Verbose, app, setup, user_errors
from nmtkit.console import console


@app.command("shortlist")
@user_errors
def shortlist(
    data_dir: Annotated[
        Path, typer.Argument(help="The data directory the model was trained on (preprocess).")
    ],
    model: ModelOpt,
    top_k: Annotated[
        int, typer.Option(help="Target pieces kept per source piece, the most probable first.")
    ] = 100,
    frequent: Annotated[
        int, typer.Option(help="Most frequent target pieces, candidates of every batch.")
    ] = 100,
    iterations: Annotated[int, typer.Option(help="EM iterations of IBM Model 1.")] = 5,
    max_pairs: Annotated[
        int,
        typer.Option(help="Learn from at most this many training pairs, drawn at random."),
    ] = 1_000_000,
    seed: Annotated[int, typer.Option(help="Seed of the sample of training pairs.")] = 1,
    verbose: Verbose = 0,
    quiet: Quiet = False,
) -> None:
    """Build a model's vocabulary shortlist from its data dir, for translate --shortlist."""
    from nmtkit.shortlist.builder import build_shortlist

    setup(verbose=verbose, quiet=quiet)
    summary = build_shortlist(
        data_dir,
        model,
        top_k=top_k,
        frequent=frequent,
        iterations=iterations,
        max_pairs=max_pairs,
        seed=seed,
    )
    if not quiet:
        console.print(
            f"wrote {summary.path} ({summary.num_bytes / 1e6:.2f} MB) in {summary.seconds:.1f} s: "
            f"{summary.num_seen:,} source pieces with {summary.mean_entries:.1f} target pieces "
            f"each on average, {summary.num_frequent} frequent pieces, from "
            f"{summary.num_pairs:,} training pairs",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
