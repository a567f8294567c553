"""The ``nmtkit`` command: thin shells over the library, one user-error handler, clean stdout."""

from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from nmtkit import __version__
from nmtkit.console import console, setup_logging
from nmtkit.errors import NmtkitError

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    help="Neural machine translation with RNNsearch: preprocess, train, translate, score, align.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])

# Help text is rich markup, where "[default: ...]" would be a tag: write "\\[default: ...]".

Verbose = Annotated[
    int, typer.Option("--verbose", "-v", count=True, help="More log detail (-v: debug).")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Only warnings and errors on stderr.")]
ModelOpt = Annotated[
    Path, typer.Option("--model", "-m", help="Model directory (its best.pt) or a checkpoint file.")
]
Threads = Annotated[
    int | None, typer.Option(min=1, help="Torch CPU threads \\[default: torch's choice].")
]
Device = Annotated[str, typer.Option(help="Torch device, e.g. cpu or cuda.")]


def user_errors(command: F) -> F:
    """Turn an NmtkitError into one line on stderr and its exit code; Ctrl-C exits 130."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except NmtkitError as exc:
            if os.environ.get("NMTKIT_DEBUG") == "1":
                traceback.print_exc()
            console.print(f"nmtkit: error: {exc}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            console.print("nmtkit: interrupted", markup=False)
            raise typer.Exit(130) from None

    return run  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nmtkit {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Neural machine translation with RNNsearch (Bahdanau, Cho and Bengio, 2015)."""


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
    normalize: Annotated[
        bool, typer.Option("--normalize/--no-normalize", help="Moses punctuation normalization.")
    ] = True,
    moses_tokenize: Annotated[
        bool, typer.Option(help="Moses-tokenize before subwords (detokenized on output).")
    ] = False,
    lowercase: Annotated[bool, typer.Option(help="Lowercase all text.")] = False,
    min_len: Annotated[
        int, typer.Option(help="Drop training pairs with fewer tokens on a side.")
    ] = 1,
    max_len: Annotated[
        int, typer.Option(help="Drop training pairs with more tokens on a side.")
    ] = 250,
    max_ratio: Annotated[
        float,
        typer.Option(help="Drop training pairs whose lengths differ by more than this factor."),
    ] = 9.0,
    dedup: Annotated[bool, typer.Option(help="Drop exact duplicate training pairs.")] = False,
    skip_invalid: Annotated[
        bool, typer.Option(help="Drop pairs with invalid UTF-8 instead of failing.")
    ] = False,
    seed: Annotated[int, typer.Option(help="SentencePiece seed.")] = 1,
    verbose: Verbose = 0,
    quiet: Quiet = False,
) -> None:
    """Normalize, clean, learn subwords and binarize a parallel corpus."""
    from nmtkit.data.preprocess import PreprocessConfig, summary_table
    from nmtkit.data.preprocess import preprocess as run_preprocess
    from nmtkit.data.text import CleanSettings, TextSettings

    setup_logging(verbosity=verbose, quiet=quiet)
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
            clean=CleanSettings(min_len=min_len, max_len=max_len, max_ratio=max_ratio, dedup=dedup),
            subword=subword,
            vocab_size=vocab_size,
            joint=joint,
            skip_invalid=skip_invalid,
            seed=seed,
        )
    )
    if not quiet:
        console.print(summary_table(summary))


@app.command()
@user_errors
def train(
    data_dir: Annotated[Path, typer.Argument(help="Data directory written by nmtkit preprocess.")],
    save_dir: Annotated[
        Path, typer.Option("--save-dir", "-o", help="Model directory for checkpoints and logs.")
    ],
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="YAML config (sections model, train, search)."),
    ] = None,
    preset: Annotated[
        str,
        typer.Option(
            help="Preset the config starts from: default, rnnsearch-paper, rnnencdec, tiny."
        ),
    ] = "default",
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Override a config key, e.g. --set train.lr=0.001 (repeatable)."
        ),
    ] = None,
    max_epochs: Annotated[
        int | None, typer.Option(help="Stop after this many epochs \\[default: no limit].")
    ] = None,
    max_updates: Annotated[
        int | None, typer.Option(help="Stop after this many updates \\[default: no limit].")
    ] = None,
    time_budget: Annotated[
        float | None,
        typer.Option(help="Stop after this many minutes of training, keeping the best checkpoint."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Random seed \\[default: the config's, 1].")
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue the run saved in --save-dir exactly where it stopped.")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option(help="Start afresh even if --save-dir holds a run.")
    ] = False,
    threads: Threads = None,
    print_config: Annotated[bool, typer.Option(help="Print the resolved config and exit.")] = False,
    verbose: Verbose = 0,
    quiet: Quiet = False,
) -> None:
    """Train an RNNsearch model (or any registered architecture) on preprocessed data."""
    from nmtkit.config import dump_yaml, load_config
    from nmtkit.training.trainer import train as run_train

    setup_logging(verbosity=verbose, quiet=quiet)
    flags = {
        "max_epochs": max_epochs,
        "max_updates": max_updates,
        "time_budget": time_budget,
        "seed": seed,
        "threads": threads,
    }
    overrides = list(set_ or []) + [f"train.{k}={v}" for k, v in flags.items() if v is not None]
    cfg = load_config(preset=preset, path=config, overrides=overrides)
    if print_config:
        typer.echo(dump_yaml(cfg), nl=False)
        return
    result = run_train(data_dir, save_dir, cfg, resume=resume, overwrite=overwrite)
    best = (
        f"best valid BLEU {result.best_bleu:.2f} at update {result.best_step}"
        if result.best_bleu is not None
        else "no validation set"
    )
    console.print(
        f"trained {result.steps} updates ({result.epochs:.2f} epochs, "
        f"{result.seconds / 60:.1f} min), stopped by {result.stop_reason}; {best}; "
        f"model in {result.model_dir}",
        markup=False,
    )


@app.command()
@user_errors
def translate(
    model: ModelOpt,
    input: Annotated[
        str, typer.Option("--input", "-i", help="Input file ('-' for stdin; .gz read).")
    ] = "-",
    output: Annotated[str, typer.Option("--output", help="Output file ('-' for stdout).")] = "-",
    beam: Annotated[
        int | None,
        typer.Option(
            help="Beam size; 1 or --greedy for greedy search \\[default: the model's, 5]."
        ),
    ] = None,
    greedy: Annotated[bool, typer.Option(help="Greedy search instead of beam search.")] = False,
    length_penalty: Annotated[
        float | None,
        typer.Option(help="Beam: rank by log p / length^alpha \\[default: the model's, 1.0]."),
    ] = None,
    batch_size: Annotated[
        int | None, typer.Option(help="Sentences per batch \\[default: the model's, 128].")
    ] = None,
    max_len_a: Annotated[
        float | None, typer.Option(help="Output cap a*|source|+b: a \\[default: the model's, 1.5].")
    ] = None,
    max_len_b: Annotated[
        int | None, typer.Option(help="Output cap a*|source|+b: b \\[default: the model's, 10].")
    ] = None,
    nbest: Annotated[
        int, typer.Option(help="Hypotheses per sentence (with --output-format nbest or jsonl).")
    ] = 1,
    output_format: Annotated[
        str,
        typer.Option(
            help="text, nbest (i ||| hypothesis ||| score) or jsonl (scores and alignments)."
        ),
    ] = "text",
    chunk_size: Annotated[
        int | None,
        typer.Option(help="Lines read before translating \\[default: 1000, 1 on a terminal]."),
    ] = None,
    device: Device = "cpu",
    threads: Threads = None,
    verbose: Verbose = 0,
    quiet: Quiet = False,
) -> None:
    """Translate raw text, one sentence a line, streaming from stdin to stdout."""
    from nmtkit.formats import open_translation_writer
    from nmtkit.translate import open_translator

    setup_logging(verbosity=verbose, quiet=quiet)
    translator = open_translator(
        model,
        beam=1 if greedy else beam,
        length_penalty=length_penalty,
        batch_size=batch_size,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        nbest=nbest,
        with_alignment=output_format == "jsonl",
        device=device,
        threads=threads,
    )
    with open_translation_writer(output, output_format) as write:
        for item in translator.translate_stream(input, chunk_size=chunk_size):
            write(item)


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
) -> None:
    """Score translations against references with sacreBLEU (BLEU, chrF, TER) and signatures."""
    from nmtkit.evaluate import report_json, report_table, score_files

    setup_logging(quiet=quiet)
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
) -> None:
    """Word alignments from attention: Pharaoh i-j lines, soft matrices, heatmap pictures."""
    from nmtkit.align import align_files

    setup_logging(quiet=quiet)
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

    setup_logging()
    typer.echo(str(download_multi30k(cache_dir)))


def main() -> None:
    """Console-script entry point."""
    app(prog_name="nmtkit")
