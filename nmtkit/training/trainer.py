"""train(): updates, validation (loss and BLEU), early stopping, checkpoints and resume, on one
device or data-parallel under torchrun.

A model directory that holds a model is never replaced without ``overwrite``; a resumed run that
already ended (early stopping, or a limit it reached that the new config does not raise) has
nothing to do. An update takes ``ranks x update_freq`` consecutive batches of the epoch's seeded
order (rank r the r-th of every ``ranks``), so that N ranks train as one process with N times the
``update_freq``; rank 0 alone logs, validates and writes.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nmtkit import checkpoint as ckpt
from nmtkit.config import Config, TrainConfig, config_from_dict, dump_yaml
from nmtkit.console import progress
from nmtkit.data.concat import ConcatPolicy
from nmtkit.data.text import PAD_ID
from nmtkit.errors import CheckpointError, DataError, Interrupted, unknown_name
from nmtkit.files import atomic_write, check_writable_dir, remove_stale_temporaries, writing
from nmtkit.models import Seq2Seq, build_model
from nmtkit.registry import Batch
from nmtkit.runtime import (
    autocast,
    describe_device,
    resolve_device,
    resolve_precision,
    tune_allocator,
)
from nmtkit.training.data import EpochExamples, TrainingData
from nmtkit.training.distributed import Distributed, session
from nmtkit.training.loop import StopSignals, Window, signal_name
from nmtkit.training.schedule import Schedule, build_schedule
from nmtkit.training.validation import validation_bleu, validation_nll

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainResult:
    """How a training run ended."""

    model_dir: Path
    steps: int
    epochs: float
    best_bleu: float | None
    best_step: int | None
    stop_reason: str
    seconds: float
    nothing_to_do: bool = False  # a resumed run that had already ended
    main: bool = True  # this process is rank 0 (or the only one); the others print nothing


@dataclass(kw_only=True)
class RunState:
    """Where a run stands; saved in ``train_state.pt`` so that a resumed run continues it."""

    step: int = 0
    epoch: int = 1
    batch_in_epoch: int = 0  # batches of this epoch already consumed, over all ranks
    batches_per_update: int = 1  # ranks x update_freq of the run that saved this state
    best_bleu: float | None = None
    best_step: int | None = None
    bad_validations: int = 0
    validated_step: int = -1  # the step of the last validation
    seconds: float = 0.0  # training wall time so far, across resumes
    stop_reason: str | None = None  # why the run ended; None while it runs or when interrupted


def concat_policy(config: TrainConfig) -> ConcatPolicy:
    """The concatenation augmentation that ``train.concat_*`` ask for."""
    return ConcatPolicy(
        rate=config.concat_rate, max_parts=config.concat_max, mode=config.concat_mode
    )


def seed_everything(seed: int) -> None:
    """Seed Python's and torch's generators, CUDA's included (nmtkit never uses numpy's global
    one)."""
    random.seed(seed)
    torch.manual_seed(seed)


def rank_seed(seed: int, rank: int, step: int) -> int:
    """The dropout seed of rank ``rank`` > 0 for update ``step``: a pure function, so that a
    resumed run re-derives it (rank 0 keeps one stream, saved in the train state)."""
    return ((seed * 1_000_003 + rank) * 1_000_003 + step) % (1 << 63)


class LossForward(torch.nn.Module):
    """The training forward, the one module DistributedDataParallel wraps: a batch's summed
    loss and NLL. Validation and search use the model itself."""

    def __init__(self, model: Seq2Seq, label_smoothing: float) -> None:
        super().__init__()
        self.model, self.label_smoothing = model, label_smoothing

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.loss(batch, label_smoothing=self.label_smoothing)


def build_optimizer(config: TrainConfig, model: Seq2Seq) -> torch.optim.Optimizer:
    """The optimizer named by ``config.optimizer``.

    Raises:
        ConfigError: unknown name.
    """
    factories = {
        # fused: one kernel for all parameters instead of a dozen passes per tensor
        "adam": lambda p: torch.optim.Adam(p, lr=config.lr, betas=config.adam_betas, fused=True),
        "adadelta": lambda p: torch.optim.Adadelta(
            p, lr=config.lr, rho=config.adadelta_rho, eps=config.adadelta_eps
        ),
    }
    if config.optimizer not in factories:
        raise unknown_name("optimizer", config.optimizer, factories, where="train.optimizer")
    return factories[config.optimizer](model.parameters())


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
        ConfigError: ``train.device`` is not on this machine, or a bad launcher setting.
        DataError: ``data_dir`` is not a data directory, or ``model_dir`` cannot be made or
            written.
        CheckpointError: ``model_dir`` holds a model (and neither resume nor overwrite is
            asked), or ``resume`` finds no train state that loads, or a different model.
        DistributedError: under torchrun, another rank died or stopped answering.
        Interrupted: SIGINT or SIGTERM stopped the run, after it was saved.
    """
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
    data = TrainingData.load(data_dir)
    held = ckpt.TRAIN_STATE, ckpt.TRAIN_STATE_PREV
    if dist.restarts and not resume and any((model_dir / name).is_file() for name in held):
        log.info("torchrun restart %d: resuming the run saved in %s", dist.restarts, model_dir)
        resume = True
    _check_model_dir(model_dir, resume=resume, overwrite=overwrite)  # every rank reads
    if dist.is_main:  # rank 0 alone writes and deletes
        check_writable_dir(model_dir)
        stale = [*ckpt.MODEL_FILES, ckpt.CONFIG, *ckpt.kept_temporaries(model_dir)]
        remove_stale_temporaries(model_dir, stale)
    tune_allocator()
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
                loop.state.step,
                ended,
                CONTINUE_HINTS[ended],
            )
            return loop.result(ended, nothing_to_do=True)
        log.info("resuming at step=%d epoch=%d", loop.state.step, loop.state.epoch)
    elif dist.is_main:
        for name in (ckpt.METRICS, ckpt.LOG, *ckpt.held_model_files(model_dir)):
            (model_dir / name).unlink(missing_ok=True)
    if dist.is_main:
        with atomic_write(model_dir / ckpt.CONFIG) as stream:
            stream.write(dump_yaml(config))
    dist.barrier()  # every rank has read the model dir before rank 0 writes into it
    return loop.run()


CONTINUE_HINTS = {
    "early_stopping": "raise train.patience, or set it to 0",
    "max_updates": "raise --max-updates",
    "max_epochs": "raise --max-epochs",
    "time_budget": "raise --time-budget",
}


def _check_model_dir(model_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse to replace a model without ``overwrite``, and to resume without a train state.

    Raises:
        CheckpointError: naming the directory, what it holds and what to do.
    """
    held = ckpt.held_model_files(model_dir)
    if resume:
        if ckpt.TRAIN_STATE in held or ckpt.TRAIN_STATE_PREV in held:
            return
        if held:
            raise CheckpointError(
                f"holds {', '.join(held)} but no {ckpt.TRAIN_STATE}, so the run cannot be resumed",
                where=str(model_dir),
                hint="its checkpoints still translate; --overwrite instead trains afresh",
            )
        raise CheckpointError("nothing to resume here", where=str(model_dir), hint="drop --resume")
    if held and not overwrite:
        raise CheckpointError(
            f"already holds a training run ({', '.join(held)})",
            where=str(model_dir),
            hint="--resume to continue it, --overwrite to replace it",
        )


class TrainingLoop:
    """One training run (or one rank's share of it): updates, logging, validation, checkpoints."""

    def __init__(
        self,
        *,
        data: TrainingData,
        model: Seq2Seq,
        config: Config,
        model_dir: Path,
        dist: Distributed | None = None,
    ) -> None:
        self.data, self.model, self.config, self.model_dir = data, model, config, model_dir
        self.train_config = config.train
        self.device = next(model.parameters()).device
        self.dist = dist or Distributed(device=self.device)
        # Base batches (of max_tokens) per update, over all ranks: the global batch.
        self.per_update = self.dist.world_size * config.train.update_freq
        self.optimizer = build_optimizer(config.train, model)
        self.schedule: Schedule = build_schedule(config.train)
        self.precision = resolve_precision(config.train.precision, self.device)
        # fp16 needs the loss scaled so that small gradients survive; elsewhere a no-op.
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.precision == "fp16")
        self.forward: torch.nn.Module = LossForward(model, config.train.label_smoothing)
        self.state = RunState(batches_per_update=self.per_update)
        self.tgt_text = data.tgt_text
        self._log_file = model_dir / ckpt.LOG
        self._stop = StopSignals()
        self._epoch_cache: tuple[int, EpochExamples, list[np.ndarray]] | None = None
        self._signum = 0  # the stop signal any rank received
        self._kept_step = -1  # the update of the newest checkpoint_<update>.pt this run wrote

    # ------------------------------------------------------------------ state and resume

    def snapshot(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(),
            "run": asdict(self.state),
            "rng": torch.get_rng_state(),
            "py_rng": list(random.getstate()[1]),
            "config": self.config.to_dict(),
            **({"cuda_rng": torch.cuda.get_rng_state(self.device)} if self._on_cuda else {}),
            **({"scaler": self.scaler.state_dict()} if self.scaler.is_enabled() else {}),
        }

    @property
    def _on_cuda(self) -> bool:
        return self.device.type == "cuda"

    def restore(self, saved: dict[str, Any]) -> None:
        """Continue the run saved in ``saved`` (a ``train_state.pt``).

        Raises:
            CheckpointError: the saved run trained a different model.
        """
        # Through the config loader, so that options added since the run was saved take their
        # defaults (the model they describe is the one the run trained).
        saved_model = config_from_dict(saved["config"]).to_dict()["model"]
        if saved_model != self.config.to_dict()["model"]:
            raise CheckpointError(
                "the saved run has another model config",
                hint="resume with the same --config and --set",
            )
        try:
            self.model.load_state_dict(saved["model"])
        except RuntimeError:
            raise CheckpointError(
                "the saved run's weights do not fit this data's vocabulary",
                hint="resume with the data directory the run started with",
            ) from None
        saved_train = saved["config"].get("train", {})
        if "concat_rate" not in saved_train and self.train_config.concat_rate and self.dist.is_main:
            log.warning(
                "the saved run predates concatenation augmentation and trained without it; "
                "this one joins pairs (train.concat_rate=%g, the default since): --set "
                "train.concat_rate=0 continues the very same run",
                self.train_config.concat_rate,
            )
        self.optimizer.load_state_dict(saved["optimizer"])
        self.schedule.load_state_dict(saved["schedule"])
        self.state = RunState(**saved["run"])
        if self.state.batches_per_update != self.per_update and self.dist.is_main:
            log.warning(
                "the saved run took %d batches per update (ranks x update_freq), this one takes "
                "%d (%d ranks x update_freq %d): continuing at the same place in the data with "
                "the new global batch, learning rate unchanged; keep ranks x update_freq to "
                "continue the very same run",
                self.state.batches_per_update,
                self.per_update,
                self.dist.world_size,
                self.train_config.update_freq,
            )
        self.state.batches_per_update = self.per_update
        torch.set_rng_state(saved["rng"])
        random.setstate((3, tuple(saved["py_rng"]), None))
        if "cuda_rng" in saved and self._on_cuda:
            torch.cuda.set_rng_state(saved["cuda_rng"], self.device)
        if "scaler" in saved and self.scaler.is_enabled():
            self.scaler.load_state_dict(saved["scaler"])
        self._keep_newer_best()
        self._drop_newer_kept()

    def _drop_newer_kept(self) -> None:
        """Delete kept checkpoints of updates after the restored state (a run killed between
        saving one and its train state): the resumed run writes its own."""
        if not self.dist.is_main:
            return
        for step, path in ckpt.kept_checkpoints(self.model_dir):
            if step > self.state.step:
                log.info("removing %s, newer than the saved run (step=%d)", path, self.state.step)
                path.unlink(missing_ok=True)

    def _keep_newer_best(self) -> None:
        """Make sure a worse model never replaces ``best.pt``: a run killed while saving, or
        resumed from ``train_state.prev.pt``, can have a ``best.pt`` newer than its state."""
        recorded = ckpt.recorded_score(self.model_dir / ckpt.BEST)
        if recorded is None:
            return
        step, bleu = recorded
        if bleu is None or step <= self.state.step:
            return
        if self.state.best_bleu is None or bleu > self.state.best_bleu:
            log.warning(
                "%s (step=%d, BLEU %.2f) is newer than the saved run (step=%d); keeping it as "
                "the best so far",
                ckpt.BEST,
                step,
                bleu,
                self.state.step,
            )
            self.state.best_bleu, self.state.best_step = bleu, step

    def limit_reached(self) -> str | None:
        """For a restored run that ended (not one interrupted): the stopping rule it still meets
        under this config, the one it stopped by first; None if a raised limit lets it go on."""
        cfg, state = self.train_config, self.state
        if state.stop_reason is None:
            return None
        met = {
            "early_stopping": self.data.valid is not None
            and cfg.patience > 0
            and state.bad_validations >= cfg.patience,
            "max_updates": cfg.max_updates is not None and state.step >= cfg.max_updates,
            "max_epochs": cfg.max_epochs is not None and state.epoch > cfg.max_epochs,
            "time_budget": cfg.time_budget is not None and state.seconds >= cfg.time_budget * 60,
        }
        order = [state.stop_reason, *met] if state.stop_reason in met else list(met)
        return next((reason for reason in order if met[reason]), None)

    def save(self, *, best: bool = False, keep: bool = False) -> None:
        """Write ``last.pt`` (and ``best.pt``) and ``train_state.pt``: rank 0 alone. ``keep``
        (at a validation and at the end) also keeps this update's ``checkpoint_<update>.pt``,
        the newest ``train.keep_last`` of them."""
        if not self.dist.is_main:
            return
        paths = [self.model_dir / ckpt.LAST] + ([self.model_dir / ckpt.BEST] if best else [])
        for path in paths:
            ckpt.save_checkpoint(
                path,
                model=self.model,
                config=self.config,
                vocab=self.data.vocab,
                step=self.state.step,
                bleu=self.state.best_bleu if best else None,
            )
        if keep and self.train_config.keep_last and self._kept_step != self.state.step:
            self._keep_checkpoint()
        ckpt.save_train_state(self.model_dir / ckpt.TRAIN_STATE, self.snapshot())

    def _keep_checkpoint(self) -> None:
        """Write this update's ``checkpoint_<update>.pt`` and delete all but the newest
        ``train.keep_last`` (each write atomic, the new one before any deletion)."""
        ckpt.save_checkpoint(
            ckpt.kept_checkpoint_path(self.model_dir, self.state.step),
            model=self.model,
            config=self.config,
            vocab=self.data.vocab,
            step=self.state.step,
            bleu=None,
        )
        self._kept_step = self.state.step
        for _, old in ckpt.kept_checkpoints(self.model_dir)[: -self.train_config.keep_last]:
            old.unlink(missing_ok=True)

    # ------------------------------------------------------------------------ the loop

    def run(self) -> TrainResult:
        """Train until a stopping rule fires. A stop signal (Ctrl-C, SIGTERM) on any rank
        finishes the update on every rank, saves, and raises :class:`Interrupted`; a second one
        aborts at once."""
        log.info(
            "precision: train %s%s, validation search %s; device %s",
            self.precision,
            " with loss scaling" if self.scaler.is_enabled() else "",
            resolve_precision(self.config.search.precision, self.device),
            describe_device(self.device),
        )
        if self.dist.active:
            log.info(
                "data parallel: %d ranks x update_freq %d = %d batches of up to %d tokens "
                "per update",
                self.dist.world_size,
                self.train_config.update_freq,
                self.per_update,
                self.train_config.max_tokens,
            )
        self.forward = self.dist.wrap(LossForward(self.model, self.train_config.label_smoothing))
        started = time.monotonic() - self.state.seconds
        self.state.stop_reason = None
        with self._stop:  # also over the closing validation and save: a signal there waits
            reason = self._epochs(started)
            self.state.seconds = time.monotonic() - started
            if reason == "interrupted":
                self.save()
                self.dist.barrier()  # the others wait for rank 0's save
                if self.dist.is_main:
                    log.warning(
                        "interrupted by %s at step=%d: saved %s (continue with --resume)",
                        signal_name(self._signum),
                        self.state.step,
                        self.model_dir,
                    )
                raise Interrupted(self._signum)
            if self.state.validated_step != self.state.step and self.data.valid is not None:
                self._validate_everywhere(final=True)
            self.state.stop_reason = reason
            self.save(best=self.data.valid is None, keep=True)
            self.dist.barrier()
        log.info(
            "stopped: %s; best val_bleu=%s at step=%s",
            reason,
            self.state.best_bleu,
            self.state.best_step,
        )
        return self.result(reason)

    def result(self, reason: str, *, nothing_to_do: bool = False) -> TrainResult:
        return TrainResult(
            model_dir=self.model_dir,
            steps=self.state.step,
            epochs=self.state.epoch - 1 + self._epoch_fraction(),
            best_bleu=self.state.best_bleu,
            best_step=self.state.best_step,
            stop_reason=reason,
            seconds=self.state.seconds,
            nothing_to_do=nothing_to_do,
            main=self.dist.is_main,
        )

    def _epoch_fraction(self) -> float:
        total = len(self._batches(self.state.epoch))
        return self.state.batch_in_epoch / max(1, total)

    def _batches(self, epoch: int) -> list[np.ndarray]:
        """The epoch's batches, kept for the epoch at hand: the progress total, the loop and the
        closing epoch count all ask, and on millions of sentences each cut takes seconds."""
        return self._epoch(epoch)[1]

    def _epoch(self, epoch: int) -> tuple[EpochExamples, list[np.ndarray]]:
        """The epoch's examples (pairs and joined pairs) and their batches, cut once."""
        if self._epoch_cache is None or self._epoch_cache[0] != epoch:
            cfg = self.train_config
            examples = EpochExamples.of(
                self.data.train, concat_policy(cfg), seed=cfg.seed, epoch=epoch
            )
            batches = examples.batches(
                max_tokens=cfg.max_tokens,
                max_sentences=cfg.max_sentences,
                seed=cfg.seed,
                epoch=epoch,
            )
            self._epoch_cache = (epoch, examples, batches)
        return self._epoch_cache[1], self._epoch_cache[2]

    def _epochs(self, started: float) -> str:
        cfg = self.train_config
        total = cfg.max_updates
        if total is None and cfg.max_epochs is not None:
            total = cfg.max_epochs * (len(self._batches(1)) // self.per_update)
        window = Window()
        if cfg.max_updates is not None and self.state.step >= cfg.max_updates:
            return "max_updates"
        with progress("loss", "lr", "tok_s", show=self.dist.is_main) as bar:
            task = bar.add_task(
                "train", total=total, completed=self.state.step, loss="-", lr="-", tok_s="-"
            )
            while cfg.max_epochs is None or self.state.epoch <= cfg.max_epochs:
                batches = self._batches(self.state.epoch)
                self._check_enough(len(batches))
                # An update takes the next per_update batches; the remainder is dropped.
                while self.state.batch_in_epoch + self.per_update <= len(batches):
                    first = self.state.batch_in_epoch
                    self._update(batches[first : first + self.per_update], window)
                    bar.update(
                        task,
                        completed=self.state.step,
                        description=f"epoch {self.state.epoch}",
                        loss=f"{window.last_loss:.3f}",
                        lr=f"{self._lr():.2g}",
                        tok_s=f"{window.rate:.0f}",
                    )
                    if self.state.step % cfg.log_every == 0:
                        self._log_train(window)
                        window = Window()
                    reason = self._stop_reason(
                        started, validate=self.state.step % cfg.validate_every == 0
                    )
                    if reason:
                        return reason
                self.state.epoch += 1
                self.state.batch_in_epoch = 0
                log.info("epoch %d done at step=%d", self.state.epoch - 1, self.state.step)
            return "max_epochs"

    def _check_enough(self, num_batches: int) -> None:
        """Raises DataError when an epoch has fewer batches than one update takes."""
        if num_batches >= self.per_update:
            return
        ranks = self.dist.world_size
        raise DataError(
            f"the training set makes {num_batches} batches of train.max_tokens="
            f"{self.train_config.max_tokens}, fewer than one update takes: {self.per_update} "
            f"(train.update_freq={self.train_config.update_freq} on each of {ranks} "
            f"rank{'s' if ranks > 1 else ''})",
            hint="lower train.max_tokens, train.update_freq or the number of ranks",
        )

    def _lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def _on_device(self, batch: Batch) -> Batch:
        if self.device.type == "cpu":
            return batch
        if self._on_cuda:  # page-locked, so that the copy overlaps the GPU's work
            return batch.pin_memory().to(self.device, non_blocking=True)
        return batch.to(self.device)

    def _update(self, group: list[np.ndarray], window: Window) -> None:
        """One update on the global batch ``group`` (ranks x update_freq batches): this rank
        takes every ``world_size``-th from its rank on, accumulating their gradients locally
        (``no_sync``) until the last, whose backward averages them over the ranks."""
        rank, world = self.dist.rank, self.dist.world_size
        self.forward.train()
        if rank:  # rank 0 keeps its generator's stream (saved); the others re-derive theirs
            torch.manual_seed(rank_seed(self.train_config.seed, rank, self.state.step))
        examples = self._epoch(self.state.epoch)[0]
        # The global batch's target tokens (EOS included) and sentences: every rank knows the
        # whole group, so this needs no communication.
        tokens = sum(examples.target_tokens(indices) for indices in group)
        sentences = sum(len(indices) for indices in group)
        lr = self.schedule.lr_at(self.state.step + 1)
        for param_group in self.optimizer.param_groups:
            param_group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        # DDP averages gradients over the ranks: x world_size makes the sum over every rank's
        # micro-batches of loss / tokens, as one process with the whole group would compute.
        scale = world / tokens
        mine = group[rank::world]
        loss_sum = nll_sum = 0.0
        my_tokens = 0
        for k, indices in enumerate(mine):
            batch = self._on_device(examples.batch(indices))
            with self.dist.no_sync(self.forward, sync=k == len(mine) - 1):
                with autocast(self.precision, self.device):
                    loss, nll = self.forward(batch)
                self.scaler.scale(loss * scale).backward()
            loss_sum += float(loss.detach())
            nll_sum += float(nll)
            my_tokens += batch.num_tgt_tokens
        if self.train_config.clip_norm > 0:
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.train_config.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.state.step += 1
        self.state.batch_in_epoch += len(group)
        window.add(loss_sum, nll_sum, my_tokens, global_tokens=tokens, sentences=sentences)

    def _stop_reason(self, started: float, *, validate: bool) -> str | None:
        """Why every rank stops after this update, if they do: the same answer on all of them
        (a signal on any rank, rank 0's validation and clock)."""
        cfg = self.train_config
        self.state.seconds = time.monotonic() - started
        out_of_time = cfg.time_budget is not None and self.state.seconds >= cfg.time_budget * 60
        signum, out_of_time_main = self.dist.all_reduce(
            [self._stop.signum or 0, out_of_time and self.dist.is_main], op="max"
        )
        if signum:
            self._signum = int(signum)
            return "interrupted"
        if validate and self.data.valid is not None and self._validate_everywhere():
            return "early_stopping"
        if cfg.max_updates is not None and self.state.step >= cfg.max_updates:
            return "max_updates"
        if out_of_time_main:
            return "time_budget"
        return None

    def _validate_everywhere(self, *, final: bool = False) -> bool:
        """Rank 0 validates (and saves); the others wait for its verdict and learning rate.
        Return whether to stop early."""
        stop = self.validate(final=final) if self.dist.is_main else False
        stop_code, lr = self.dist.broadcast([stop, self.schedule.base_lr])
        self.schedule.base_lr = lr
        self.state.validated_step = self.state.step
        return bool(stop_code)

    # --------------------------------------------------------------------- reporting

    def _write_metrics(self, record: dict[str, Any]) -> None:
        if not self.dist.is_main:
            return
        line = " ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items()
        )
        for path, text in (
            (self.model_dir / ckpt.METRICS, json.dumps(record)),
            (self._log_file, line),
        ):
            with writing(path), open(path, "a", encoding="utf-8") as stream:
                stream.write(text + "\n")
        log.info("%s", line)

    def _log_train(self, window: Window) -> None:
        """Every rank: the window's loss summed over the ranks; rank 0 writes it."""
        loss_sum, nll_sum = self.dist.all_reduce([window.loss_sum, window.nll_sum])
        tokens, updates = max(window.global_tokens, 1), max(window.updates, 1)
        nll = nll_sum / tokens
        self._write_metrics(
            {
                "kind": "train",
                "step": self.state.step,
                "epoch": self.state.epoch,
                "loss": loss_sum / tokens,
                "nll": nll,
                "ppl": math.exp(min(nll, 50.0)),
                "lr": self._lr(),
                "tok_s": window.rate,  # target tokens per second, all ranks together
                "tokens_per_update": window.global_tokens / updates,
                "sentences_per_update": window.sentences / updates,
                "seconds": round(self.state.seconds, 1),
            }
        )

    def validate(self, *, final: bool = False) -> bool:
        """Validate, keep the best checkpoint, and return whether to stop early."""
        valid = self.data.valid
        assert valid is not None
        val_nll = validation_nll(
            self.model,
            valid,
            max_tokens=self.train_config.max_tokens,
            max_sentences=self.train_config.max_sentences,
            precision=self.train_config.precision,
        )
        bleu = validation_bleu(
            self.model, valid, self.data.valid_refs, self.tgt_text, self.config.search
        )
        self.state.validated_step = self.state.step
        improved = self.state.best_bleu is None or bleu.score > self.state.best_bleu
        if improved:
            self.state.best_bleu, self.state.best_step = bleu.score, self.state.step
            self.state.bad_validations = 0
        elif not final:
            self.state.bad_validations += 1
        if not final:  # the closing validation must not change a run that a resume continues
            self.schedule.after_validation(bleu.score)
        self._write_metrics(
            {
                "kind": "valid",
                "step": self.state.step,
                "val_loss": val_nll,
                "val_ppl": math.exp(min(val_nll, 50.0)),
                "val_bleu": bleu.score,
                "best": self.state.best_bleu,
                "signature": bleu.signature,
            }
        )
        self.save(best=improved, keep=True)
        patience = self.train_config.patience
        return patience > 0 and self.state.bad_validations >= patience
