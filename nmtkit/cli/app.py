"""The typer application and what every subcommand shares: options, set-up, one error handler.

Only this package exits the process, and only in :func:`user_errors`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from nmtkit import __version__
from nmtkit.cli.defaults import default_tag
from nmtkit.console import console, setup_logging
from nmtkit.errors import Interrupted, NmtkitError

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    help="Neural machine translation with RNNsearch: preprocess, train, translate, score, align.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])

# Help text is rich markup, where "[default: ...]" would be a tag: write "\\[default: ...]", and
# take the value from the library (nmtkit.cli.defaults), never by hand.
SEARCH = "config.py:SearchConfig"
MODEL = "the model's"  # whose setting wins over the shown default
LENGTHS = "search/length_policy.py:LengthPolicy"

Verbose = Annotated[
    int, typer.Option("--verbose", "-v", count=True, help="More log detail (-v: debug).")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Only warnings and errors on stderr.")]
ModelOpt = Annotated[
    Path, typer.Option("--model", "-m", help="Model directory (its best.pt) or a checkpoint file.")
]
# -m of the commands that take an ensemble.
ENSEMBLE_HELP = (
    "Model directory (its best.pt) or a checkpoint file; repeat for an ensemble of models of "
    "one vocabulary, whose probabilities are averaged at every step (the first's settings)."
)
ModelsOpt = Annotated[list[Path], typer.Option("--model", "-m", help=ENSEMBLE_HELP)]
Threads = Annotated[
    int | None, typer.Option(min=1, help="Torch CPU threads \\[default: torch's choice].")
]
Device = Annotated[str, typer.Option(help="Torch device, e.g. cpu or cuda.")]
# --precision: align adds its own default, Precision the model's.
PRECISION_HELP = (
    "Matrix products in fp32 or bf16; packed16: the decoder's weights stored as fp16 for "
    "fbgemm, fp32 arithmetic (x86), 2-3x faster than fp32 one sentence at a time; auto: bf16 "
    "where the CPU has native bf16 (AVX512-BF16, AMX), else packed16 where fbgemm is, else "
    "fp32; int8: the decoder's weights in int8, its inputs quantized to int8 row by row "
    "(torchao: pip install torchao), faster than fp32 but slower than bf16 on a CPU with native "
    "bf16 (docs/speed.md)."
)
Precision = Annotated[
    str | None,
    typer.Option(help=f"{PRECISION_HELP} {default_tag(SEARCH, 'precision', of=MODEL)}."),
]
Output = Annotated[str, typer.Option("--output", help="Output file ('-' for stdout).")]
# --batch-size of the commands that read sentence pairs (align, score-pairs).
PairBatchSize = Annotated[int, typer.Option(help="Most sentence pairs per batch.")]
UserDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--user-dir",
        help="Import plugin components from this folder of Python modules (repeatable).",
    ),
]


# Options whose help differs between commands by a word; the command gives the type:
# ``batch_size: Annotated[int | None, model_batch_size_option("search batch")] = None``.
def model_batch_size_option(batch: str = "batch") -> Any:
    """--batch-size of a command whose default is the model's: most sentences per ``batch``."""
    tag = default_tag(SEARCH, "batch_size", of=MODEL)
    return typer.Option(help=f"Most sentences per {batch} {tag}.")


def pair_max_tokens_option(verb: str) -> Any:
    """--max-tokens of a command that reads sentence pairs, which it ``verb`` (aligned, scored)."""
    return typer.Option(
        help="Most padded pieces per batch, pairs x (longest side + 1); a longer pair is "
        f"{verb} alone {default_tag(LENGTHS, 'max_tokens')}."
    )


def output_cap_option(term: str) -> Any:
    """--max-len-a or --max-len-b (``term`` a or b), whose default is the model's."""
    tag = default_tag(SEARCH, f"max_len_{term}", of=MODEL)
    return typer.Option(help=f"Output cap a*|source|+b: {term} {tag}.")


def user_errors(command: F) -> F:
    """Turn what a user or the machine causes into one line on stderr and an exit code.

    An NmtkitError exits with its own code; an operating-system error that no layer below
    named (a full disk, a permission, a missing device) exits 1 naming the file; Ctrl-C exits
    130 and SIGTERM 143 (``train`` saves first; the others delete their temporary files); a
    reader that closes the pipe (``| head``) ends the command quietly, with 141 as for any Unix
    filter killed by SIGPIPE.
    """

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            with _sigterm_interrupts():
                return command(*args, **kwargs)
        except NmtkitError as exc:
            _fail(str(exc))
            raise typer.Exit(exc.exit_code) from None
        except BrokenPipeError:
            _silence_stdout()
            raise typer.Exit(141) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}")
            raise typer.Exit(1) from None
        except Interrupted as exc:
            console.print(f"nmtkit: interrupted by {exc.args[0]}", markup=False)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            console.print("nmtkit: interrupted", markup=False)
            raise typer.Exit(130) from None

    return run  # type: ignore[return-value]


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Let SIGTERM interrupt a command as Ctrl-C does (``Interrupted``, exit 143), so that it
    deletes its temporary files on the way out; ``train`` catches it itself, to save first. Left
    alone outside the main thread and where SIGTERM is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        if previous is not None:  # None: set outside Python, cannot be put back
            signal.signal(signal.SIGTERM, previous)


def _terminate(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def _fail(message: str) -> None:
    if os.environ.get("NMTKIT_DEBUG") == "1":
        traceback.print_exc()
    console.print(f"nmtkit: error: {message}", markup=False, highlight=False, soft_wrap=True)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit cannot fail on
    the closed pipe again (and print a traceback of its own)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def setup(
    *, verbose: int = 0, quiet: bool = False, user_dirs: Sequence[Path] | None = None
) -> None:
    """Configure logging and import the ``--user-dir`` plugin folders, in that order."""
    from nmtkit.plugins import load_user_dir

    setup_logging(verbosity=verbose, quiet=quiet)
    for folder in user_dirs or ():
        load_user_dir(folder)


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
