"""train(): updates, validation (loss and BLEU), early stopping, checkpoints and resume.

A model directory that holds a model is never replaced without ``overwrite``; a resumed run that
already ended (early stopping, or a limit it reached that the new config does not raise) has
nothing to do.
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
from nmtkit.config import Config, TrainConfig, dump_yaml
from nmtkit.console import progress
from nmtkit.data.batching import epoch_batches
from nmtkit.data.text import PAD_ID
from nmtkit.errors import CheckpointError, Interrupted, unknown_name
from nmtkit.files import atomic_write, check_writable_dir, remove_stale_temporaries, writing
from nmtkit.models import Seq2Seq, build_model
from nmtkit.runtime import autocast, resolve_precision, tune_allocator
from nmtkit.training.data import TrainingData
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


@dataclass(kw_only=True)
class RunState:
    """Where a run stands; saved in ``train_state.pt`` so that a resumed run continues it."""

    step: int = 0
    epoch: int = 1
    batch_in_epoch: int = 0  # batches of this epoch already consumed
    best_bleu: float | None = None
    best_step: int | None = None
    bad_validations: int = 0
    validated_step: int = -1  # the step of the last validation
    seconds: float = 0.0  # training wall time so far, across resumes
    stop_reason: str | None = None  # why the run ended; None while it runs or when interrupted


def seed_everything(seed: int) -> None:
    """Seed Python's and torch's generators (nmtkit never uses numpy's global one)."""
    random.seed(seed)
    torch.manual_seed(seed)


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
    """Train a model on a preprocessed data directory, writing checkpoints into ``model_dir``.

    A resumed run that already ended returns at once (``nothing_to_do``) unless ``config``
    raises the limit it stopped at.

    Raises:
        DataError: ``data_dir`` is not a data directory, or ``model_dir`` cannot be made or
            written.
        CheckpointError: ``model_dir`` holds a model (and neither resume nor overwrite is
            asked), or ``resume`` finds no train state that loads, or a different model.
        Interrupted: SIGINT or SIGTERM stopped the run, after it was saved.
    """
    data = TrainingData.load(Path(data_dir))
    model_dir = Path(model_dir)
    _check_model_dir(model_dir, resume=resume, overwrite=overwrite)
    check_writable_dir(model_dir)
    remove_stale_temporaries(model_dir, [*ckpt.MODEL_FILES, ckpt.CONFIG])
    tune_allocator()
    if config.train.threads:
        torch.set_num_threads(config.train.threads)
    seed_everything(config.train.seed)
    model = build_model(
        config.model,
        src_vocab_size=data.src_text.vocab_size,
        tgt_vocab_size=data.tgt_text.vocab_size,
        pad_id=PAD_ID,
    )
    loop = TrainingLoop(data=data, model=model, config=config, model_dir=model_dir)
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
    else:
        for name in (ckpt.METRICS, ckpt.LOG, *ckpt.MODEL_FILES):
            (model_dir / name).unlink(missing_ok=True)
    with atomic_write(model_dir / ckpt.CONFIG) as stream:
        stream.write(dump_yaml(config))
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
    held = [name for name in ckpt.MODEL_FILES if (model_dir / name).is_file()]
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
    """One training run: updates, logging, validation, checkpoints."""

    def __init__(
        self, *, data: TrainingData, model: Seq2Seq, config: Config, model_dir: Path
    ) -> None:
        self.data, self.model, self.config, self.model_dir = data, model, config, model_dir
        self.train_config = config.train
        self.device = next(model.parameters()).device
        self.optimizer = build_optimizer(config.train, model)
        self.schedule: Schedule = build_schedule(config.train)
        self.state = RunState()
        self.tgt_text = data.tgt_text
        self._log_file = model_dir / ckpt.LOG
        self._stop = StopSignals()

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
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Continue the run saved in ``saved`` (a ``train_state.pt``).

        Raises:
            CheckpointError: the saved run trained a different model.
        """
        if saved["config"]["model"] != self.config.to_dict()["model"]:
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
        self.optimizer.load_state_dict(saved["optimizer"])
        self.schedule.load_state_dict(saved["schedule"])
        self.state = RunState(**saved["run"])
        torch.set_rng_state(saved["rng"])
        random.setstate((3, tuple(saved["py_rng"]), None))
        self._keep_newer_best()

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

    def save(self, *, best: bool = False) -> None:
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
        ckpt.save_train_state(self.model_dir / ckpt.TRAIN_STATE, self.snapshot())

    # ------------------------------------------------------------------------ the loop

    def run(self) -> TrainResult:
        """Train until a stopping rule fires. A stop signal (Ctrl-C, SIGTERM) finishes the
        update, saves, and raises :class:`Interrupted`; a second one aborts at once."""
        log.info(
            "precision: train %s, validation search %s",
            resolve_precision(self.config.train.precision, self.device),
            resolve_precision(self.config.search.precision, self.device),
        )
        started = time.monotonic() - self.state.seconds
        self.state.stop_reason = None
        with self._stop:  # also over the closing validation and save: a signal there waits
            reason = self._epochs(started)
            self.state.seconds = time.monotonic() - started
            if reason == "interrupted":
                self.save()
                signum = self._stop.signum
                assert signum is not None
                log.warning(
                    "interrupted by %s at step=%d: saved %s (continue with --resume)",
                    signal_name(signum),
                    self.state.step,
                    self.model_dir,
                )
                raise Interrupted(signum)
            if self.state.validated_step != self.state.step and self.data.valid is not None:
                self.validate(final=True)
            self.state.stop_reason = reason
            self.save(best=self.data.valid is None)
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
        )

    def _epoch_fraction(self) -> float:
        total = len(self._batches(self.state.epoch))
        return self.state.batch_in_epoch / max(1, total)

    def _batches(self, epoch: int) -> list[np.ndarray]:
        train = self.data.train
        return epoch_batches(
            train.src.lengths,
            train.tgt.lengths,
            max_tokens=self.train_config.max_tokens,
            max_sentences=self.train_config.max_sentences,
            seed=self.train_config.seed,
            epoch=epoch,
        )

    def _epochs(self, started: float) -> str:
        cfg = self.train_config
        total = cfg.max_updates
        if total is None and cfg.max_epochs is not None:
            total = cfg.max_epochs * len(self._batches(1))
        window = Window()
        if cfg.max_updates is not None and self.state.step >= cfg.max_updates:
            return "max_updates"
        with progress("loss", "lr", "tok_s") as bar:
            task = bar.add_task(
                "train", total=total, completed=self.state.step, loss="-", lr="-", tok_s="-"
            )
            while cfg.max_epochs is None or self.state.epoch <= cfg.max_epochs:
                batches = self._batches(self.state.epoch)
                for indices in batches[self.state.batch_in_epoch :]:
                    self._update(indices, window)
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

    def _lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def _update(self, indices: np.ndarray, window: Window) -> None:
        self.model.train()
        batch = self.data.train.batch(indices)
        lr = self.schedule.lr_at(self.state.step + 1)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        with autocast(self.train_config.precision, self.device):
            loss, nll = self.model.loss(batch, label_smoothing=self.train_config.label_smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        (loss / batch.num_tgt_tokens).backward()
        if self.train_config.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.train_config.clip_norm)
        self.optimizer.step()
        self.state.step += 1
        self.state.batch_in_epoch += 1
        window.add(float(loss.detach()), float(nll), batch.num_tgt_tokens)

    def _stop_reason(self, started: float, *, validate: bool) -> str | None:
        cfg = self.train_config
        self.state.seconds = time.monotonic() - started
        if self._stop.received:
            return "interrupted"
        if validate and self.data.valid is not None and self.validate():
            return "early_stopping"
        if cfg.max_updates is not None and self.state.step >= cfg.max_updates:
            return "max_updates"
        if cfg.time_budget is not None and self.state.seconds >= cfg.time_budget * 60:
            return "time_budget"
        return None

    # --------------------------------------------------------------------- reporting

    def _write_metrics(self, record: dict[str, Any]) -> None:
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
        self._write_metrics(
            {
                "kind": "train",
                "step": self.state.step,
                "epoch": self.state.epoch,
                "loss": window.loss,
                "nll": window.nll,
                "ppl": math.exp(min(window.nll, 50.0)),
                "lr": self._lr(),
                "tok_s": window.rate,
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
        self.save(best=improved)
        patience = self.train_config.patience
        return patience > 0 and self.state.bad_validations >= patience
