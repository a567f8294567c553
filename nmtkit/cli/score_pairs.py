"""`nmtkit score-pairs`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmtkit.cli.app import (
    Device,
    ModelOpt,
    Output,
    PairBatchSize,
    Precision,
    Quiet,
    Threads,
    UserDirs,
    Verbose,
    app,
    pair_max_tokens_option,
    setup,
    user_errors,
)
from nmtkit.errors import ConfigError


@app.command("score-pairs")
@user_errors
def score_pairs(
    model: ModelOpt,
    source: Annotated[Path, typer.Option(help="Source sentences, one a line.")],
    target: Annotated[
        Path | None, typer.Option(help="Their translations, one a line (or give --nbest).")
    ] = None,
    nbest: Annotated[
        Path | None,
        typer.Option(
            help="Rescore this Moses n-best list (i ||| hypothesis ||| \\[features |||] score; "
            "i counts --source lines from 0) instead of --target."
        ),
    ] = None,
    feature: Annotated[
        str | None,
        typer.Option(
            help="--nbest: the name of the feature that gets the model's score \\[default: nmt]."
        ),
    ] = None,
    output: Output = "-",
    output_format: Annotated[
        str | None,
        typer.Option(
            help="--target: tsv (log_prob, score, ppl, num_tokens a line) or jsonl "
            "\\[default: tsv]."
        ),
    ] = None,
    length_penalty: Annotated[
        float | None,
        typer.Option(
            help="Score as beam search with this alpha of GNMT's length penalty "
            "\\[default: the model's search]."
        ),
    ] = None,
    coverage_penalty: Annotated[
        float | None,
        typer.Option(
            help="Score as beam search with this beta of GNMT's coverage penalty "
            "\\[default: the model's search]."
        ),
    ] = None,
    greedy: Annotated[
        bool, typer.Option(help="Score as greedy search does: log p / length (EOS counted).")
    ] = False,
    batch_size: PairBatchSize = 64,
    max_tokens: Annotated[int | None, pair_max_tokens_option("scored")] = None,
    device: Device = "cpu",
    threads: Threads = None,
    precision: Precision = None,
    verbose: Verbose = 0,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Score given translations with a model (forced decoding): log p, score and perplexity.

    The score is the one the model's search ranks by (beam: GNMT's length and coverage
    penalties), so a translation scores as translate reported it. --nbest instead rescores an
    n-best list, re-sorting each sentence's hypotheses by the model's score.
    """
    from nmtkit.outputs import check_writable
    from nmtkit.search.length_policy import LengthPolicy
    from nmtkit.search.overrides import SearchOverrides
    from nmtkit.translation.forced import check_format, check_pairs, open_scorer, score_files
    from nmtkit.translation.nbest import check_feature_name, check_nbest, rescore_nbest

    setup(verbose=verbose, quiet=quiet, user_dirs=user_dir)
    if target is not None and nbest is not None:
        raise ConfigError("--target and --nbest exclude each other", hint="give one")
    if nbest is not None:
        if output_format is not None:
            raise ConfigError("--output-format is for --target; --nbest writes Moses lines")
        check_feature_name(feature or "nmt")
        check_writable(output)
        check_nbest(source, nbest)  # every input problem before the model loads
    elif target is not None:
        if feature is not None:
            raise ConfigError("--feature is for --nbest")
        check_format(output_format or "tsv")
        check_writable(output)
        check_pairs(source, target)
    else:
        raise ConfigError("missing option --target (or --nbest)", hint="the translations to score")
    scorer = open_scorer(
        model,
        search=SearchOverrides(
            greedy=greedy, length_penalty=length_penalty, coverage_penalty=coverage_penalty
        ),
        batch_size=batch_size,
        lengths=LengthPolicy.of(max_tokens=max_tokens),
        device=device,
        threads=threads,
        precision=precision,
    )
    if nbest is not None:
        rescore_nbest(scorer, source, nbest, feature=feature or "nmt", output=output)
    elif target is not None:
        score_files(scorer, source, target, output=output, fmt=output_format or "tsv")
