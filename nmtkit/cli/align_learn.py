"""`nmtkit align --learn` and `--aligner`: the options, checked, turned into library calls."""

from __future__ import annotations

from pathlib import Path

from nmtkit.alignment.gold import AlignmentScores, GoldFile
from nmtkit.errors import ConfigError


def learned_alignment(
    *,
    source: Path,
    target: Path,
    aligner: Path | None,
    extra_source: list[Path],
    extra_target: list[Path],
    save_aligner: Path | None,
    method: str,
    threshold: float,
    output: str | None,
    plot: Path | None,
    plot_format: str,
    gold: GoldFile | None,
    epochs: int,
    time_budget: float | None,
    repeat: int,
    agreement: float,
    members: int,
    distortion: str,
    char_ngrams: bool,
    spelling: bool,
    lowercase: bool,
    seed: int,
    threads: int | None,
    quiet: bool,
) -> AlignmentScores | None:
    """Learn an aligner pair on the files (or load one) and write the links; the gold scores."""
    import torch

    from nmtkit.alignment.neural.aligners import AlignerEnsemble
    from nmtkit.alignment.neural.learned_alignment import Extraction, learn_and_align
    from nmtkit.alignment.neural.learner import LearnConfig
    from nmtkit.alignment.neural.model import AlignerConfig

    if len(extra_source) != len(extra_target):
        raise ConfigError(
            f"{len(extra_source)} --extra-source but {len(extra_target)} --extra-target",
            hint="give each extra source file its target file",
        )
    if aligner is not None and (extra_source or save_aligner):
        raise ConfigError("--aligner aligns only: --extra-source and --save-aligner need --learn")
    if threads is not None:
        torch.set_num_threads(threads)
    config = LearnConfig(
        aligner=AlignerConfig(distortion=distortion, char_ngrams=char_ngrams, spelling=spelling),
        epochs=epochs,
        time_budget=time_budget,
        repeat=repeat,
        agreement=agreement,
        members=members,
        seed=seed,
    )
    result = learn_and_align(
        source,
        target,
        config=config,
        aligner=AlignerEnsemble.load(aligner) if aligner is not None else None,
        extra=list(zip(extra_source, extra_target, strict=True)),
        extraction=Extraction(
            method=method,
            threshold=threshold,
            output=output,
            plot_dir=plot,
            plot_format=plot_format,
        ),
        lowercase=lowercase,
        save=save_aligner,
        gold=gold,
        show_progress=not quiet,
    )
    return result.scores
