"""`nmtkit train`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from nmtkit.cli.app import Quiet, Threads, UserDirs, Verbose, app, setup, user_errors
from nmtkit.cli.defaults import default_tag
from nmtkit.console import console

TRAIN = "config.py:TrainConfig"
CONFIGS = "the config's"


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
        int | None,
        typer.Option(help=f"Random seed {default_tag(TRAIN, 'seed', of=CONFIGS)}."),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            help="Continue the run saved in --save-dir exactly where it stopped (a run that "
            "ended has nothing to do unless you raise the limit it stopped at)."
        ),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option(help="Start afresh even if --save-dir holds a model, deleting its files."),
    ] = False,
    threads: Threads = None,
    device: Annotated[
        str | None,
        typer.Option(
            help="Torch device: cpu, cuda or cuda:N (under torchrun, cuda is cuda:LOCAL_RANK) "
            f"{default_tag(TRAIN, 'device', of=CONFIGS)}."
        ),
    ] = None,
    tensorboard: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Also write the records of metrics.jsonl as TensorBoard scalars into DIR "
            "(train.tensorboard; needs the tensorboard extra). --resume appends to it.",
        ),
    ] = None,
    print_config: Annotated[bool, typer.Option(help="Print the resolved config and exit.")] = False,
    verbose: Verbose = 0,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Train an RNNsearch model (or any registered architecture) on preprocessed data.

    Under torchrun each process trains one rank of a data-parallel run (docs/scale.md).
    """
    from nmtkit.config import dump_yaml, load_config
    from nmtkit.training.trainer import train as run_train

    setup(verbose=verbose, quiet=quiet, user_dirs=user_dir)
    flags = {
        "max_epochs": max_epochs,
        "max_updates": max_updates,
        "time_budget": time_budget,
        "seed": seed,
        "threads": threads,
        "device": device,
    }
    overrides = list(set_ or []) + [f"train.{k}={v}" for k, v in flags.items() if v is not None]
    if tensorboard is not None:  # a path, quoted: JSON's string is YAML's too
        overrides.append(f"train.tensorboard={json.dumps(str(tensorboard))}")
    cfg = load_config(preset=preset, path=config, overrides=overrides)
    if print_config:
        typer.echo(dump_yaml(cfg), nl=False)
        return
    result = run_train(data_dir, save_dir, cfg, resume=resume, overwrite=overwrite)
    if result.nothing_to_do or not result.main:  # train logged why; rank 0 reports
        return
    best = (
        f"best valid BLEU {result.best_bleu:.2f} at update {result.best_update}"
        if result.best_bleu is not None
        else "no validation set"
    )
    console.print(
        f"trained {result.updates} updates ({result.epochs:.2f} epochs, "
        f"{result.seconds / 60:.1f} min), stopped by {result.stop_reason}; {best}; "
        f"model in {result.model_dir}",
        markup=False,
    )
