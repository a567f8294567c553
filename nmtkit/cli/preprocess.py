"""`nmtkit preprocess`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmtkit.cli.app import Quiet, UserDirs, Verbose, app, setup, user_errors
from nmtkit.console import console


@app.command()
@user_errors
def preprocess(
    source_lang: Annotated[
        str, typer.Option("--source-lang", "-s", help="Source language code, e.g. en.")
    ],
    target_lang: Annotated[
        str, typer.Option("--target-lang", "-t", help="Target language code, e.g. de.")
    ],
    trainpref: Annotated[
        str,
        typer.Option(
            help="Training corpus prefix: reads PREFIX.SRC_LANG and PREFIX.TGT_LANG (or .gz)."
        ),
    ],
    destdir: Annotated[
        Path, typer.Option(help="Data directory to write (replaced only on success).")
    ],
    validpref: Annotated[
        str | None, typer.Option(help="Validation corpus prefix (never cleaned).")
    ] = None,
    testpref: Annotated[
        str | None, typer.Option(help="Test corpus prefix (never cleaned).")
    ] = None,
    subword: Annotated[str, typer.Option(help="SentencePiece model type: bpe or unigram.")] = "bpe",
    vocab_size: Annotated[int, typer.Option(help="SentencePiece vocabulary size.")] = 8000,
    joint: Annotated[
        bool,
        typer.Option(
            "--joint/--separate", help="One subword model for both languages, or one each."
        ),
    ] = True,
    trim_target_vocab: Annotated[
        bool,
        typer.Option(
            "--trim-target-vocab/--keep-target-vocab",
            help="Give the target only the subword pieces its training side uses (a smaller "
            "output layer); keep them all for model.share_embeddings.",
        ),
    ] = True,
    normalize: Annotated[
        bool, typer.Option("--normalize/--no-normalize", help="Moses punctuation normalization.")
    ] = True,
    moses_tokenize: Annotated[
        bool, typer.Option(help="Moses-tokenize before subwords (detokenized on output).")
    ] = False,
    lowercase: Annotated[bool, typer.Option(help="Lowercase all text.")] = False,
    min_len: Annotated[
        int, typer.Option(help="Drop training pairs with fewer words on a side.")
    ] = 1,
    max_len: Annotated[
        int, typer.Option(help="Drop training pairs with more words on a side.")
    ] = 250,
    max_pieces: Annotated[
        int,
        typer.Option(
            help="Drop training pairs with more subword pieces on a side (EOS not counted); "
            "cut validation and test sentences to it."
        ),
    ] = 250,
    max_ratio: Annotated[
        float,
        typer.Option(help="Drop training pairs whose lengths differ by more than this factor."),
    ] = 9.0,
    dedup: Annotated[bool, typer.Option(help="Drop exact duplicate training pairs.")] = False,
    skip_invalid: Annotated[
        bool, typer.Option(help="Drop pairs with invalid UTF-8 instead of failing.")
    ] = False,
    sampled_segmentations: Annotated[
        int,
        typer.Option(
            min=0,
            help="Also write the training pairs this many times with a sampled segmentation "
            "(BPE-dropout, or unigram sampling); training reads one an epoch, in turn.",
        ),
    ] = 0,
    sampling_alpha: Annotated[
        float,
        typer.Option(
            help="BPE-dropout's probability, or the unigram model's smoothing, for those "
            "samples; in (0, 1]."
        ),
    ] = 0.1,
    subword_sample: Annotated[
        int,
        typer.Option(
            min=0,
            help="Learn subwords from at most this many training pairs, drawn at random (0: all).",
        ),
    ] = 1_000_000,
    workers: Annotated[
        int,
        typer.Option(
            min=0,
            help="Processes that prepare, clean and encode the training text (0: one per CPU "
            "core); the output does not depend on it.",
        ),
    ] = 1,
    seed: Annotated[int, typer.Option(help="Seed of SentencePiece and of its sample.")] = 1,
    verbose: Verbose = 0,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Normalize, clean, learn subwords and binarize a parallel corpus."""
    from nmtkit.data.preprocess import PreprocessConfig, summary_table
    from nmtkit.data.preprocess import preprocess as run_preprocess
    from nmtkit.data.text import CleanSettings, TextSettings

    setup(verbose=verbose, quiet=quiet, user_dirs=user_dir)
    summary = run_preprocess(
        PreprocessConfig(
            src_lang=source_lang,
            tgt_lang=target_lang,
            trainpref=trainpref,
            validpref=validpref,
            testpref=testpref,
            destdir=str(destdir),
            text=TextSettings(
                normalize=normalize, moses_tokenize=moses_tokenize, lowercase=lowercase
            ),
            clean=CleanSettings(
                min_len=min_len,
                max_len=max_len,
                max_ratio=max_ratio,
                dedup=dedup,
                max_pieces=max_pieces,
            ),
            subword=subword,
            vocab_size=vocab_size,
            joint=joint,
            trim_target_vocab=trim_target_vocab,
            sampled_segmentations=sampled_segmentations,
            sampling_alpha=sampling_alpha,
            subword_sample=subword_sample,
            skip_invalid=skip_invalid,
            seed=seed,
        ),
        workers=workers,
    )
    if not quiet:
        console.print(summary_table(summary))
