"""train(): updates, validation (loss and BLEU), early stopping, checkpoints and resume, on one
device or data-parallel under torchrun.

A model directory that holds a model is never replaced without ``overwrite``; a resumed run that
already ended (early stopping, or a limit it reached that the new config does not raise) has
nothing to do. An update takes ``ranks x update_freq`` consecutive batches of the epoch's seeded
order (rank r the r-th of every ``ranks``), so that N ranks train as one process with N times the
``update_freq``; rank 0 alone logs, validates and writes. The pieces live beside this module:
``model_dir`` (the directory's rules), ``update`` (one update), ``validation``, ``stopping``
(signals and limits), ``train_state`` (resume), ``reporting`` and ``loop`` (what ties them).
"""

from __future__ import annotations

import logging
import random
from pathlib import Path

import torch

from nmtkit import checkpoint as ckpt
from nmtkit.config import Config
from nmtkit.data.text import PAD_ID
from nmtkit.errors import ConfigError
from nmtkit.models import build_model
from nmtkit.outputs import check_writable_dir
from nmtkit.runtime import limit_kernel_cache, resolve_device, tune_allocator
from nmtkit.training.data import TrainingData, concat_policy
from nmtkit.training.distributed import Distributed, session
from nmtkit.training.loop import TrainingLoop, TrainResult
from nmtkit.training.model_dir import (
    check_model_dir,
    clean_model_dir,
    holds_train_state,
    start_afresh,
    write_config,
)
from nmtkit.training.stopping import CONTINUE_HINTS
from nmtkit.training.tensorboard import check_installed
from nmtkit.training.train_state import RunState
from nmtkit.training.update import LossForward, build_optimizer, rank_seed

# Names that lived here before the trainer was split into its pieces, still importable from here.
__all__ = [
    "LossForward",
    "RunState",
    "TrainResult",
    "TrainingLoop",
    "build_optimizer",
    "concat_policy",
    "rank_seed",
    "seed_everything",
    "train",
]

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    """Seed Python's and torch's generators, CUDA's included (nmtkit never uses numpy's global
    one)."""
    random.seed(seed)
    torch.manual_seed(seed)


def train(
    data_dir: Path,
    model_dir: Path,
    config: Config,
    *,
    resume: bool = False,
    overwrite: bool = False,
) -> TrainResult:
    """Train a model on a preprocessed data directory, writing checkpoints into ``model_dir``,
    on ``train.device``; under torchrun as one rank of a data-parallel run (a torchrun restart
    resumes the saved run by itself).

    A resumed run that already ended returns at once (``nothing_to_do``) unless ``config``
    raises the limit it stopped at.

    Raises:
        ConfigError: ``train.device`` is not on this machine, a bad launcher setting, or
            ``train.tensorboard`` without the ``tensorboard`` extra installed.
        DataError: ``data_dir`` is not a data directory, or ``model_dir`` (or the
            ``train.tensorboard`` folder) cannot be made or written.
        CheckpointError: ``model_dir`` holds a model (and neither resume nor overwrite is
            asked), or ``resume`` finds no train state that loads, or a different model.
        DistributedError: under torchrun, another rank died or stopped answering.
        Interrupted: SIGINT or SIGTERM stopped the run, after it was saved.
    """
    if config.train.tensorboard is not None:
        check_installed()
    device = resolve_device(config.train.device)
    with session(device) as dist:
        return _train(
            Path(data_dir), Path(model_dir), config, dist, resume=resume, overwrite=overwrite
        )


def _train(
    data_dir: Path,
    model_dir: Path,
    config: Config,
    dist: Distributed,
    *,
    resume: bool,
    overwrite: bool,
) -> TrainResult:
    """Check the model directory, build the model, restore a saved run or start afresh, and
    run the loop."""
    data = TrainingData.load(data_dir)
    if config.model.share_embeddings and data.vocab.src_spm != data.vocab.tgt_spm:
        raise ConfigError(
            "share_embeddings needs one SentencePiece model for both languages, and this data "
            "has one per language",
            where=f"{data_dir}: model.share_embeddings",
            hint="preprocess with --joint (the default) and --keep-target-vocab",
        )
    if dist.restarts and not resume and holds_train_state(model_dir):
        log.info("torchrun restart %d: resuming the run saved in %s", dist.restarts, model_dir)
        resume = True
    check_model_dir(model_dir, resume=resume, overwrite=overwrite)  # every rank reads
    if dist.is_main:  # rank 0 alone writes and deletes
        clean_model_dir(model_dir)
        if config.train.tensorboard is not None:
            check_writable_dir(config.train.tensorboard)
    tune_allocator()
    limit_kernel_cache()
    if config.train.threads:
        torch.set_num_threads(config.train.threads)
    seed_everything(config.train.seed)
    model = build_model(
        config.model,
        src_vocab_size=data.src_text.vocab_size,
        tgt_vocab_size=data.tgt_text.vocab_size,
        pad_id=PAD_ID,
    ).to(dist.device)
    loop = TrainingLoop(data=data, model=model, config=config, model_dir=model_dir, dist=dist)
    if resume:
        saved, _ = ckpt.load_latest_train_state(model_dir)
        loop.restore(saved)
        ended = loop.limit_reached()
        if ended is not None:
            log.info(
                "nothing to do: the run in %s ended at step=%d by %s (to continue, %s)",
                model_dir,
                loop.state.updates,
                ended,
                CONTINUE_HINTS[ended],
            )
            return loop.result(ended, nothing_to_do=True)
        log.info("resuming at step=%d epoch=%d", loop.state.updates, loop.state.epoch)
    elif dist.is_main:
        start_afresh(model_dir)
    if dist.is_main:
        write_config(model_dir, config)
    dist.barrier()  # every rank has read the model dir before rank 0 writes into it
    return loop.run()
