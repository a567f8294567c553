"""`nmtkit score`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nmtkit.cli.app import Quiet, UserDirs, app, setup, user_errors
from nmtkit.cli.defaults import default, default_tag
from nmtkit.console import console
from nmtkit.errors import ConfigError

SIGNIFICANCE = "scoring/significance.py"
_NUM_SAMPLES = default(SIGNIFICANCE, "DEFAULT_NUM_SAMPLES")
_SEED = default(SIGNIFICANCE, "DEFAULT_SEED")

if TYPE_CHECKING:
    from nmtkit.scoring.comparison import LengthOptions
    from nmtkit.scoring.significance import SignificanceOptions
    from nmtkit.scoring.terms import RequiredTerms

Refs = Annotated[
    list[Path],
    typer.Option(
        "--ref", "-r", help="Reference file; repeat for several references of the same sentences."
    ),
]
Systems = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="[SYSTEM]...",
        help="Hypotheses files, one per system; the first is the baseline of paired tests.",
        show_default=False,
    ),
]
Input = Annotated[
    str | None,
    typer.Option(
        "--input",
        "-i",
        help="Hypotheses file ('-' for stdin), scored before any SYSTEM "
        "\\[default: '-' when no SYSTEM is given].",
    ),
]
Names = Annotated[
    list[str] | None,
    typer.Option("--name", help="Label of each system, in order (repeat) \\[default: file names]."),
]
Metrics = Annotated[
    list[str] | None,
    typer.Option("--metric", "-M", help="bleu, chrf, ter (repeatable) \\[default: all three]."),
]
PairedBs = Annotated[
    bool,
    typer.Option("--paired-bs", help="Paired bootstrap resampling against the first system."),
]
PairedAr = Annotated[
    bool,
    typer.Option("--paired-ar", help="Paired approximate randomization against the first system."),
]
PairedBsN = Annotated[int, typer.Option("--paired-bs-n", min=1, help="Bootstrap resamples.")]
PairedArN = Annotated[int, typer.Option("--paired-ar-n", min=1, help="Randomization trials.")]
Seed = Annotated[int, typer.Option(min=1, help="Seed of the paired tests (sacrebleu's).")]
ByLength = Annotated[
    bool, typer.Option("--by-length", help="BLEU per sentence-length bucket, per system.")
]
Source = Annotated[
    Path | None,
    typer.Option("--source", help="Source sentences, to bucket by source length (--by-length)."),
]
BucketBy = Annotated[
    str | None,
    typer.Option(
        "--bucket-by",
        help="source or reference length \\[default: source with --source, else reference].",
    ),
]
Buckets = Annotated[
    str | None,
    typer.Option(
        "--buckets",
        help="Bucket edges in words: [0,10), ..., [50,inf) "
        f"{default_tag('scoring/length_buckets.py', 'DEFAULT_EDGES')}.",
    ),
]
Terms = Annotated[
    Path | None,
    typer.Option(
        "--terms",
        help="Required target terms, a line per hypothesis line (tab-separated, as translate "
        "--constraints): adds term accuracy (TermAcc).",
    ),
]
Plot = Annotated[
    Path | None,
    typer.Option("--plot", help="Draw BLEU against length to this .png/.svg/.pdf (--by-length)."),
]


@app.command()
@user_errors
def score(
    refs: Refs,
    systems: Systems = None,
    hyp: Input = None,
    names: Names = None,
    metrics: Metrics = None,
    lowercase: Annotated[
        bool, typer.Option("--lowercase", "-lc", help="Case-insensitive BLEU (as sacrebleu -lc).")
    ] = False,
    tokenize: Annotated[
        str | None,
        typer.Option(
            "--tokenize", "-tok", help="BLEU tokenizer (as sacrebleu -tok) \\[default: 13a]."
        ),
    ] = None,
    paired_bs: PairedBs = False,
    paired_ar: PairedAr = False,
    paired_bs_n: PairedBsN = _NUM_SAMPLES["bs"],
    paired_ar_n: PairedArN = _NUM_SAMPLES["ar"],
    seed: Seed = _SEED,
    by_length: ByLength = False,
    source: Source = None,
    bucket_by: BucketBy = None,
    buckets: Buckets = None,
    plot: Plot = None,
    terms: Terms = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON on stdout instead of tab-separated lines.")
    ] = False,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Score translations against references with sacreBLEU (BLEU, chrF, TER) and signatures.

    Several systems are scored side by side; --paired-bs or --paired-ar tests each against the
    first, --by-length adds BLEU per sentence-length bucket, and --terms term accuracy.
    """
    from nmtkit.scoring.comparison import (
        compare_files,
        comparison_json,
        comparison_lines,
        comparison_views,
    )
    from nmtkit.scoring.length_buckets import check_plot, plot_bleu_by_length

    setup(quiet=quiet, user_dirs=user_dir)
    significance = _significance(paired_bs, paired_ar, paired_bs_n, paired_ar_n, seed)
    lengths = _length_options(by_length or plot is not None, source, bucket_by, buckets)
    if plot is not None:
        check_plot(plot)
    required = None if terms is None else _read_terms(terms)
    comparison = compare_files(
        [*([hyp] if hyp is not None else []), *(systems or ())] or ["-"],
        refs,
        names=names,
        metrics=tuple(metrics or ("bleu", "chrf", "ter")),
        lowercase=lowercase,
        tokenize=tokenize,
        significance=significance,
        by_length=lengths,
        terms=required,
    )
    if plot is not None and comparison.by_length is not None:
        plot_bleu_by_length(comparison.by_length, comparison.names, plot)
    for warning in comparison.warnings:
        console.print(f"nmtkit: warning: {warning}", markup=False)
    if as_json:
        typer.echo(comparison_json(comparison))
        return
    if not quiet:
        for table, signatures in comparison_views(comparison):
            console.print(table)
            for line in signatures:  # unwrapped, so that they can be copied whole
                console.print(line, soft_wrap=True, markup=False, highlight=False)
    for line in comparison_lines(comparison):
        typer.echo(line)


def _significance(
    paired_bs: bool, paired_ar: bool, bs_n: int, ar_n: int, seed: int
) -> SignificanceOptions | None:
    from nmtkit.scoring.significance import SignificanceOptions

    if paired_bs and paired_ar:
        raise ConfigError("--paired-bs and --paired-ar exclude each other", hint="choose one")
    if not (paired_bs or paired_ar):
        return None
    test = "bs" if paired_bs else "ar"
    return SignificanceOptions(test=test, num_samples=bs_n if paired_bs else ar_n, seed=seed)


def _length_options(
    by_length: bool, source: Path | None, bucket_by: str | None, buckets: str | None
) -> LengthOptions | None:
    from nmtkit.scoring.comparison import LengthOptions
    from nmtkit.scoring.length_buckets import DEFAULT_EDGES, parse_buckets

    if not by_length:
        for flag, value in (
            ("--source", source),
            ("--bucket-by", bucket_by),
            ("--buckets", buckets),
        ):
            if value is not None:
                raise ConfigError(f"{flag} is used only with --by-length")
        return None
    edges = DEFAULT_EDGES if buckets is None else parse_buckets(buckets)
    return LengthOptions(edges=edges, by=bucket_by, src_path=source)


def _read_terms(path: Path) -> RequiredTerms:
    from nmtkit.scoring.terms import RequiredTerms
    from nmtkit.terminology.glossary import read_constraints

    if str(path) == "-":
        raise ConfigError("--terms needs a file, not stdin")
    lines = read_constraints(path)
    return RequiredTerms(
        name=str(path), lines=tuple(tuple(term.target for term in line) for line in lines)
    )
