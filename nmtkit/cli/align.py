"""`nmtkit align`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TypeVar

import typer

from nmtkit.cli.app import (
    LENGTHS,
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
from nmtkit.cli.defaults import default, default_tag
from nmtkit.console import console
from nmtkit.errors import ConfigError

_METHODS = "argmax, threshold; with --reverse-model: intersection, union, grow-diag, "
_METHODS += "grow-diag-final, grow-diag-final-and"
_LEARNED_METHODS = "soft, forward, reverse and the bidirectional ones"
EXTRACT = "alignment/neural/extract.py"
LEARN = "alignment/neural/learner.py:LearnConfig"
ALIGNER = "alignment/neural/model.py:AlignerConfig"

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
    method: Annotated[
        str | None,
        typer.Option(
            help=f"How links are made: {_METHODS}; --learn/--aligner: {_LEARNED_METHODS} "
            f"\\[default: argmax; {default(EXTRACT, 'DEFAULT_METHOD')} with --learn/--aligner]."
        ),
    ] = None,
    threshold: Annotated[
        float,
        typer.Option(
            help="Least attention weight of a link (--method threshold), or least mean posterior "
            "of the two directions (--method soft)."
        ),
    ] = default(EXTRACT, "DEFAULT_THRESHOLD"),
    learn: Annotated[
        bool,
        typer.Option(
            "--learn",
            help="Learn to align --source/--target (plus --extra-source/--extra-target) with a "
            "neural HMM aligner in both directions, then align them; no model needed.",
            rich_help_panel="Learning to align",
        ),
    ] = False,
    aligner: Annotated[
        Path | None,
        typer.Option(
            help="Align with an aligner saved by --learn --save-aligner (its words only).",
            rich_help_panel="Learning to align",
        ),
    ] = None,
    extra_source: Annotated[
        list[Path] | None,
        typer.Option(
            help="More source text to learn from (tokenized like --source); repeatable.",
            rich_help_panel="Learning to align",
        ),
    ] = None,
    extra_target: Annotated[
        list[Path] | None,
        typer.Option(
            help="Its target side, one per --extra-source.", rich_help_panel="Learning to align"
        ),
    ] = None,
    save_aligner: Annotated[
        Path | None,
        typer.Option(help="Write the learned aligner here.", rich_help_panel="Learning to align"),
    ] = None,
    epochs: Annotated[
        int, typer.Option(min=1, help="Training epochs.", rich_help_panel="Learning to align")
    ] = default(LEARN, "epochs"),
    time_budget: Annotated[
        float | None,
        typer.Option(
            help="Minutes of training at most.", rich_help_panel="Learning to align", min=0.01
        ),
    ] = None,
    repeat: Annotated[
        int,
        typer.Option(
            min=1,
            help="Copies of the text to align in the training text (weighs it against extra).",
            rich_help_panel="Learning to align",
        ),
    ] = default(LEARN, "repeat"),
    agreement: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Weight of training both directions toward their agreed links (0: apart).",
            rich_help_panel="Learning to align",
        ),
    ] = default(LEARN, "agreement"),
    members: Annotated[
        int,
        typer.Option(
            min=1,
            help="Aligner pairs learned with seeds --seed, --seed + 1, ...; their posteriors are "
            "averaged (the time budget is shared).",
            rich_help_panel="Learning to align",
        ),
    ] = default(LEARN, "members"),
    distortion: Annotated[
        str,
        typer.Option(
            help="hmm (jumps between source positions) or attention (plain soft attention).",
            rich_help_panel="Learning to align",
        ),
    ] = default(ALIGNER, "distortion"),
    char_ngrams: Annotated[
        bool,
        typer.Option(
            help="Let the lexicon see words' spelling (cognates, names).",
            rich_help_panel="Learning to align",
        ),
    ] = default(ALIGNER, "char_ngrams"),
    spelling: Annotated[
        bool,
        typer.Option(
            help="Let the lexicon score how alike words are spelled (Dice of character trigrams).",
            rich_help_panel="Learning to align",
        ),
    ] = default(ALIGNER, "spelling"),
    keep_case: Annotated[
        bool,
        typer.Option(
            "--keep-case",
            help="Do not lowercase the text before learning.",
            rich_help_panel="Learning to align",
        ),
    ] = False,
    seed: Annotated[
        int, typer.Option(help="Random seed of learning.", rich_help_panel="Learning to align")
    ] = default(LEARN, "seed"),
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
            "warning naming the pair; 0: no cap "
            f"{default_tag(LENGTHS, 'max_source_len', note=', whole pairs')}."
        ),
    ] = None,
    device: Device = "cpu",
    threads: Threads = None,
    precision: Annotated[str, typer.Option(help=PRECISION_HELP)] = "fp32",
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Word alignments from attention (Pharaoh i-j lines, soft matrices, heatmaps) and their AER;
    with --learn, learn to align a corpus and align it."""
    from nmtkit.alignment.file_alignment import AlignOutput, align_files
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
    if learn or aligner is not None:
        if learn and aligner is not None:
            raise ConfigError("--learn and --aligner exclude each other", hint="pick one")
        if model or reverse_model or evaluate is not None:
            raise ConfigError(
                f"{'--learn' if learn else '--aligner'} aligns without --model, "
                "--reverse-model or --evaluate"
            )
        from nmtkit.cli.align_learn import learned_alignment

        scores = learned_alignment(
            source=_required(source, "--source"),
            target=_required(target, "--target"),
            aligner=aligner,
            extra_source=extra_source or [],
            extra_target=extra_target or [],
            save_aligner=save_aligner,
            method=method or "soft",
            threshold=threshold,
            output=output or (None if golden else "-"),
            plot=plot,
            plot_format=plot_format,
            gold=golden,
            epochs=epochs,
            time_budget=time_budget,
            repeat=repeat,
            agreement=agreement,
            members=members,
            distortion=distortion,
            char_ngrams=char_ngrams,
            spelling=spelling,
            lowercase=not keep_case,
            seed=seed,
            threads=threads,
            quiet=quiet,
        )
    elif evaluate is not None:
        if golden is None:
            raise ConfigError("--evaluate needs --gold, the file to score against")
        scores = score_alignment_file(evaluate, golden)
    else:
        from nmtkit.search.length_policy import LengthPolicy  # imports torch: not for --evaluate

        lengths = LengthPolicy.of(max_source_len=max_source_len, max_tokens=max_tokens)
        scores = align_files(
            _required(model, "--model"),
            _required(source, "--source"),
            _required(target, "--target"),
            method=method or "argmax",
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
