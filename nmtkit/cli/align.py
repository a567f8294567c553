"""`nmtkit align`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TypeVar

import typer

from nmtkit.cli.app import (
    PRECISION_HELP,
    Device,
    PairBatchSize,
    Quiet,
    Threads,
    UserDirs,
    app,
    pair_max_tokens_option,
    setup,
    user_errors,
)
from nmtkit.console import console
from nmtkit.errors import ConfigError

_METHODS = "argmax, threshold; with --reverse-model: intersection, union, grow-diag, "
_METHODS += "grow-diag-final, grow-diag-final-and"

T = TypeVar("T")


def _required(value: T | None, flag: str) -> T:
    if not value:  # None, or an empty list of models
        raise ConfigError(f"missing option {flag}", hint="or score a file with --evaluate --gold")
    return value


@app.command()
@user_errors
def align(
    model: Annotated[
        list[Path] | None,
        typer.Option(
            "--model",
            "-m",
            help="Source->target model directory or checkpoint file; repeat for an ensemble of "
            "models of one vocabulary, whose attention weights are averaged.",
        ),
    ] = None,
    source: Annotated[Path | None, typer.Option(help="Source sentences, one a line.")] = None,
    target: Annotated[Path | None, typer.Option(help="Their translations, one a line.")] = None,
    method: Annotated[str, typer.Option(help=f"How links are made: {_METHODS}.")] = "argmax",
    threshold: Annotated[
        float, typer.Option(help="Least attention weight of a link (--method threshold).")
    ] = 0.5,
    reverse_model: Annotated[
        Path | None,
        typer.Option(help="Target->source model, for the bidirectional methods."),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            help="Pharaoh output file ('-' for stdout) \\[default: stdout; none with --gold].",
        ),
    ] = None,
    soft: Annotated[
        bool, typer.Option(help="Write the word-level attention matrices as JSON lines instead.")
    ] = False,
    plot: Annotated[
        Path | None, typer.Option(help="Write one heatmap per pair into this folder.")
    ] = None,
    plot_format: Annotated[str, typer.Option(help="Heatmap format: png, svg or pdf.")] = "png",
    gold: Annotated[
        Path | None,
        typer.Option(help="Score against these gold links: 'i-j' sure, 'ipj' possible."),
    ] = None,
    gold_one_indexed: Annotated[
        bool,
        typer.Option(
            "--gold-one-indexed", help="The gold counts words from 1 (as the Hansards gold does)."
        ),
    ] = False,
    reverse: Annotated[
        bool, typer.Option("--reverse", help="The gold writes target-source pairs 'j-i'.")
    ] = False,
    evaluate: Annotated[
        Path | None,
        typer.Option(
            help="Score this Pharaoh file (0-based source-target links, from any aligner) "
            "against --gold; no model needed."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the scores as JSON on stdout.")
    ] = False,
    limit: Annotated[int | None, typer.Option(help="Only the first N pairs.")] = None,
    batch_size: PairBatchSize = 64,
    max_tokens: Annotated[int | None, pair_max_tokens_option("aligned")] = None,
    max_source_len: Annotated[
        int | None,
        typer.Option(
            help="Most pieces read of each side of a pair; a longer side is cut to it, with a "
            "warning naming the pair; 0: no cap \\[default: 0, whole pairs]."
        ),
    ] = None,
    device: Device = "cpu",
    threads: Threads = None,
    precision: Annotated[str, typer.Option(help=PRECISION_HELP)] = "fp32",
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Word alignments from attention (Pharaoh i-j lines, soft matrices, heatmaps) and their AER."""
    from nmtkit.alignment.corpus import AlignOutput, align_files
    from nmtkit.alignment.gold import (
        AlignmentScores,
        GoldFile,
        report_json,
        report_line,
        report_table,
        score_alignment_file,
    )

    setup(quiet=quiet, user_dirs=user_dir)
    golden = GoldFile(path=gold, one_indexed=gold_one_indexed, reverse=reverse) if gold else None
    scores: AlignmentScores | None
    if evaluate is not None:
        if golden is None:
            raise ConfigError("--evaluate needs --gold, the file to score against")
        scores = score_alignment_file(evaluate, golden)
    else:
        from nmtkit.search.decode import LengthPolicy  # imports torch: not for --evaluate

        lengths = LengthPolicy.of(max_source_len=max_source_len, max_tokens=max_tokens)
        scores = align_files(
            _required(model, "--model"),
            _required(source, "--source"),
            _required(target, "--target"),
            method=method,
            threshold=threshold,
            reverse_model_path=reverse_model,
            output=AlignOutput(
                path=output or (None if golden else "-"),
                soft=soft,
                plot_dir=plot,
                plot_format=plot_format,
            ),
            gold=golden,
            limit=limit,
            batch_size=batch_size,
            device=device,
            threads=threads,
            lengths=lengths,
            precision=precision,
        ).scores
    if scores is None:
        return
    if not quiet:
        console.print(report_table(scores))
    typer.echo(report_json(scores) if as_json else report_line(scores))
