"""`nmtkit score`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmtkit.cli.app import (
    Quiet,
    UserDirs,
    app,
    setup,
    user_errors,
)
from nmtkit.console import console


@app.command()
@user_errors
def score(
    refs: Annotated[
        list[Path],
        typer.Option("--ref", "-r", help="Reference file (repeat for several references)."),
    ],
    hyp: Annotated[
        str, typer.Option("--input", "-i", help="Hypotheses file ('-' for stdin).")
    ] = "-",
    metrics: Annotated[
        list[str] | None,
        typer.Option("--metric", "-M", help="bleu, chrf, ter (repeatable) \\[default: all three]."),
    ] = None,
    lowercase: Annotated[
        bool, typer.Option("--lowercase", "-lc", help="Case-insensitive BLEU (as sacrebleu -lc).")
    ] = False,
    tokenize: Annotated[
        str | None,
        typer.Option(
            "--tokenize", "-tok", help="BLEU tokenizer (as sacrebleu -tok) \\[default: 13a]."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON on stdout instead of a table.")
    ] = False,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Score translations against references with sacreBLEU (BLEU, chrF, TER) and signatures."""
    from nmtkit.evaluate import report_json, report_table, score_files

    setup(quiet=quiet, user_dirs=user_dir)
    report = score_files(
        hyp,
        refs,
        metrics=tuple(metrics or ("bleu", "chrf", "ter")),
        lowercase=lowercase,
        tokenize=tokenize,
    )
    for warning in report.warnings:
        console.print(f"nmtkit: warning: {warning}", markup=False)
    if as_json:
        typer.echo(report_json(report))
    else:
        if not quiet:
            console.print(report_table(report))
        for item in report.scores:
            typer.echo(f"{item.name}\t{item.score:.2f}\t{item.signature}")
