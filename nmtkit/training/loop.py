"""The training loop that ties a run's pieces together: for each global batch, one update; a log
line and a validation (which keeps checkpoints) when due; then stop when a signal, patience, a
limit or the time budget says so, and save. Rank 0 alone logs, validates and writes."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from nmtkit.checkpoint import BEST, SHORTLIST
from nmtkit.config import Config
from nmtkit.errors import DataError, Interrupted
from nmtkit.models import Seq2Seq
from nmtkit.runtime import describe_device, resolve_precision
from nmtkit.shortlist.builder import learn_shortlist
from nmtkit.training import train_state
from nmtkit.training.data import Epochs, TrainingData
from nmtkit.training.distributed import Distributed
from nmtkit.training.model_dir import Checkpoints
from nmtkit.training.reporting import RunLog, Window, progress_bar
from nmtkit.training.run_length_dropout import LONG_EPOCHS, SHORT_EPOCHS, RunLengthDropout
from nmtkit.training.schedule import schedule_name
from nmtkit.training.search_tuning import (
    store_search,
    tune_length_penalty,
    tunes_search,
    with_length_penalty,
)
from nmtkit.training.stopping import StopRules, StopSignals, signal_name
from nmtkit.training.train_state import RunState
from nmtkit.training.update import Updater
from nmtkit.training.validation import validation_scores

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainResult:
    """How a training run ended."""

    model_dir: Path
    updates: int
    epochs: float
    best_bleu: float | None
    best_update: int | None
    stop_reason: str
    seconds: float
    nothing_to_do: bool = False  # a resumed run that had already ended
    main: bool = True  # this process is rank 0 (or the only one); the others print nothing

    @property
    def steps(self) -> int:
        """``updates``, by its name in nmtkit 0.1."""
        return self.updates

    @property
    def best_step(self) -> int | None:
        """``best_update``, by its name in nmtkit 0.1."""
        return self.best_update


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
        self.device = next(model.parameters()).device
        self.dist = dist or Distributed(device=self.device)
        self.updater = Updater(model, config.train, self.dist)
        self.dropout = RunLengthDropout(model.model_dropouts(), config)
        self.epochs = Epochs(
            data.epoch_splits(sampled=config.train.sampled_segmentations), config.train
        )
        self.checkpoints = Checkpoints(
            model_dir, config=config, vocab=data.vocab, is_main=self.dist.is_main
        )
        self.run_log = RunLog(model_dir, self.dist)
        self.rules = StopRules(config.train, self.dist)
        self.signals = StopSignals()
        self.state = RunState(batches_per_update=self.updater.per_update)
        self._signum = 0  # the stop signal any rank received

    # ------------------------------------------------------------------ the algorithm

    def run(self) -> TrainResult:
        """Train until a stopping rule fires. A stop signal (Ctrl-C, SIGTERM) on any rank
        finishes the update on every rank, saves, and raises :class:`Interrupted`; a second one
        aborts at once. TensorBoard's log (``train.tensorboard``) is closed however it ends."""
        self._log_setup()
        self.updater.wrap()
        started = time.monotonic() - self.state.seconds
        self.state.stop_reason = None
        board = self.run_log.tensorboard(self.config.train.tensorboard, after=self.state.updates)
        # also over the closing validation and save: a signal there waits
        with self.signals, board:
            reason = self._train_until_stopped(started)
            self.state.seconds = time.monotonic() - started
            if reason == "interrupted":
                self._save_and_abort()
            if self.state.validated_update != self.state.updates and self.data.valid is not None:
                self._validate_everywhere(final=True)
            self.state.stop_reason = reason
            self.save(best=self.data.valid is None, keep=True)
            self.dist.barrier()
            if self.dist.is_main and self.data.valid is not None and tunes_search(self.config):
                self._tune_search()
            if self.dist.is_main and self.config.train.shortlist:
                self._write_shortlist()
        log.info(
            "stopped: %s; best val_bleu=%s at step=%s",
            reason,
            self.state.best_bleu,
            self.state.best_update,
        )
        return self.result(reason)

    def _train_until_stopped(self, started: float) -> str:
        """For each global batch: update, log when due, then ask the stopping rules (a
        validation among them when due). Return why the run stops."""
        cfg = self.config.train
        window = Window()
        if self.rules.max_updates_reached(self.state):
            return "max_updates"
        total, done = self._total_updates(), self.state.updates
        with progress_bar(total=total, done=done, show=self.dist.is_main) as bar:
            for group in self._global_batches():
                self._update(group, window)
                bar.show(
                    window, update=self.state.updates, epoch=self.state.epoch, lr=self.updater.lr
                )
                if self._due(cfg.log_every):
                    self._log_window(window)
                    window = Window()
                reason = self._stop_reason(started, validate=self._due(cfg.validate_every))
                if reason:
                    return reason
        return "max_epochs"

    def _update(self, group: list[np.ndarray], window: Window) -> None:
        """One update on the global batch ``group``: the run moves past its batches, and
        ``window`` adds up what it saw."""
        examples = self.epochs.examples(self.state.epoch)
        epoch_batches = len(self.epochs.batches(self.state.epoch))
        progress = self.rules.progress(self.state, epoch_batches=epoch_batches)
        epochs_done = self.state.epochs_done(epoch_batches)
        self.dropout.follow(epochs_done=epochs_done, progress=progress)
        sums = self.updater.update(group, examples, done=self.state.updates, progress=progress)
        self.state.updates += 1
        self.state.batch_in_epoch += len(group)
        window.add(
            sums.loss_sum,
            sums.nll_sum,
            sums.tokens,
            global_tokens=sums.global_tokens,
            sentences=sums.sentences,
        )

    def _due(self, every: int) -> bool:
        """Whether the update just made is one of every ``every``."""
        return self.state.updates % every == 0

    def _global_batches(self) -> Iterator[list[np.ndarray]]:
        """The next ``ranks x update_freq`` batches of the epoch's order, from where the run
        stands, epoch after epoch up to ``train.max_epochs``; an epoch's remainder is dropped."""
        max_epochs = self.config.train.max_epochs
        per_update = self.updater.per_update
        while max_epochs is None or self.state.epoch <= max_epochs:
            batches = self.epochs.batches(self.state.epoch)
            self.updater.check_enough(len(batches))
            while self.state.batch_in_epoch + per_update <= len(batches):
                first = self.state.batch_in_epoch
                yield batches[first : first + per_update]
            self.state.epoch += 1
            self.state.batch_in_epoch = 0
            log.info("epoch %d done at step=%d", self.state.epoch - 1, self.state.updates)

    def _stop_reason(self, started: float, *, validate: bool) -> str | None:
        """Why every rank stops after this update, if they do: the same answer on all of them
        (a signal on any rank, rank 0's validation and clock)."""
        alarm = self.rules.poll(self.signals, seconds=time.monotonic() - started)
        self.state.seconds = alarm.seconds  # rank 0's clock on every rank
        if alarm.signum:
            self._signum = alarm.signum
            return "interrupted"
        if validate and self.data.valid is not None and self._validate_everywhere():
            return "early_stopping"
        if self.rules.max_updates_reached(self.state):
            return "max_updates"
        if alarm.out_of_time:
            return "time_budget"
        return None

    def _validate_everywhere(self, *, final: bool = False) -> bool:
        """Rank 0 validates (and saves); the others wait for its verdict and learning rate.
        Return whether to stop early."""
        schedule = self.updater.schedule
        stop = self.validate(final=final) if self.dist.is_main else False
        stop_code, lr = self.dist.broadcast([stop, schedule.base_lr])
        schedule.base_lr = lr
        self.state.validated_update = self.state.updates
        return bool(stop_code)

    def validate(self, *, final: bool = False) -> bool:
        """Validate, keep the best checkpoint, and return whether to stop early. The closing
        validation (``final``) must not change a run that a resume continues."""
        scores = validation_scores(self.model, self.data, self.config)
        improved = self.state.record_validation(scores.bleu.score, counts=not final)
        if not final:
            self.updater.schedule.after_validation(scores.bleu.score)
        self.run_log.validation(
            update=self.state.updates,
            val_nll=scores.nll,
            bleu=scores.bleu,
            best=self.state.best_bleu,
        )
        self.save(best=improved, keep=True)
        return self.rules.patience_ran_out(self.state)

    def _tune_search(self) -> None:
        """Choose the beam's length penalty on the validation set for ``best.pt`` and store it
        in the model directory (:mod:`nmtkit.training.search_tuning`)."""
        tuned = tune_length_penalty(
            self.model_dir / BEST, self.data, self.config, stop=lambda: self.signals.received
        )
        if tuned is None:
            signum = self.signals.signum or 0
            log.warning(
                "%s while choosing the length penalty: the model is saved with its configured one",
                signal_name(signum),
            )
            raise Interrupted(signum)
        self.config = with_length_penalty(self.config, tuned.chosen)
        self.checkpoints.config = self.config
        store_search(self.model_dir, self.config)
        self.run_log.write(
            {
                "kind": "search",
                "step": self.state.updates,
                "length_penalty": tuned.chosen,
                "val_bleu": tuned.bleu[tuned.chosen],
                "tried": {str(alpha): round(bleu, 2) for alpha, bleu in tuned.bleu.items()},
                "best": tuned.best,
                "p_value": tuned.p_value,
                "seconds": round(tuned.seconds, 1),
            }
        )

    def _write_shortlist(self) -> None:
        """Learn the vocabulary shortlist from the training pairs and write it beside the
        checkpoints, where ``translate --shortlist`` finds it (:mod:`nmtkit.shortlist`)."""
        start = time.monotonic()
        data = self.data
        try:
            shortlist = learn_shortlist(
                data.train.src,
                data.train.tgt,
                src_vocab_size=data.src_text.vocab_size,
                tgt_vocab_size=data.tgt_text.vocab_size,
                fingerprint=data.vocab.fingerprint,
                seed=self.config.train.seed,
            )
            shortlist.save(self.model_dir / SHORTLIST)
        except DataError as exc:  # the model is saved: translate goes on without a shortlist
            log.warning("no %s written: %s", SHORTLIST, exc)
            return
        log.info(
            "wrote %s in %.1f s (for translate --shortlist)",
            self.model_dir / SHORTLIST,
            time.monotonic() - start,
        )

    def _save_and_abort(self) -> NoReturn:
        """Save the interrupted run on rank 0 and raise :class:`Interrupted` on every rank."""
        self.save()
        self.dist.barrier()  # the others wait for rank 0's save
        if self.dist.is_main:
            log.warning(
                "interrupted by %s at step=%d: saved %s (continue with --resume)",
                signal_name(self._signum),
                self.state.updates,
                self.model_dir,
            )
        raise Interrupted(self._signum)

    # ------------------------------------------------------------------ state and resume

    def snapshot(self) -> dict[str, Any]:
        """The train state of this process: what a resumed run restores."""
        return train_state.snapshot(
            model=self.model,
            optimizer=self.updater.optimizer,
            schedule=self.updater.schedule,
            scaler=self.updater.scaler,
            state=self.state,
            config=self.config,
        )

    def restore(self, saved: dict[str, Any]) -> None:
        """Continue the run saved in ``saved`` (a ``train_state.pt``).

        Raises:
            CheckpointError: the saved run trained a different model.
        """
        self.state = train_state.restore(
            saved,
            model=self.model,
            optimizer=self.updater.optimizer,
            schedule=self.updater.schedule,
            scaler=self.updater.scaler,
            config=self.config,
            dist=self.dist,
        )
        self.checkpoints.reconcile(self.state)

    def limit_reached(self) -> str | None:
        """For a restored run that ended: the stopping rule it still meets under this config;
        None if it goes on (:meth:`StopRules.limit_reached`)."""
        return self.rules.limit_reached(self.state, validates=self.data.valid is not None)

    def save(self, *, best: bool = False, keep: bool = False) -> None:
        """Write ``last.pt`` (and ``best.pt``, and with ``keep`` this update's kept checkpoint)
        and ``train_state.pt``: rank 0 alone."""
        if not self.dist.is_main:
            return
        self.checkpoints.save(self.model, self.state, best=best, keep=keep)
        self.checkpoints.save_train_state(self.snapshot())

    def result(self, reason: str, *, nothing_to_do: bool = False) -> TrainResult:
        total = len(self.epochs.batches(self.state.epoch))
        return TrainResult(
            model_dir=self.model_dir,
            updates=self.state.updates,
            epochs=self.state.epochs_done(total),
            best_bleu=self.state.best_bleu,
            best_update=self.state.best_update,
            stop_reason=reason,
            seconds=self.state.seconds,
            nothing_to_do=nothing_to_do,
            main=self.dist.is_main,
        )

    # ------------------------------------------------------------------ reporting

    def _log_setup(self) -> None:
        updater, cfg = self.updater, self.config.train
        log.info(
            "precision: train %s%s, validation search %s; device %s",
            updater.precision,
            " with loss scaling" if updater.scaler.is_enabled() else "",
            resolve_precision(self.config.search.precision, self.device),
            describe_device(self.device),
        )
        log.info("learning rate: %g, schedule %s", cfg.lr, schedule_name(cfg))
        if self.dropout.active:
            log.info(
                "dropout: %g for a run of up to %g epochs, %g from %g (short_run_dropout), by "
                "the epochs this run is on course to see",
                self.dropout.short,
                SHORT_EPOCHS,
                self.dropout.full,
                LONG_EPOCHS,
            )
        if self.data.train_sampled and self.epochs.splits[0] is not self.data.train:
            log.info(
                "subword regularization: %d sampled segmentations, one an epoch",
                len(self.epochs.splits),
            )
        elif self.data.train_sampled:
            log.info("the data dir's sampled segmentations are not read (sampled_segmentations)")
        if self.dist.active:
            log.info(
                "data parallel: %d ranks x update_freq %d = %d batches of up to %d tokens "
                "per update",
                self.dist.world_size,
                cfg.update_freq,
                updater.per_update,
                cfg.max_tokens,
            )

    def _total_updates(self) -> int | None:
        """The updates the run will make, if a limit says (for the progress bar)."""
        cfg = self.config.train
        if cfg.max_updates is None and cfg.max_epochs is not None:
            return cfg.max_epochs * (len(self.epochs.batches(1)) // self.updater.per_update)
        return cfg.max_updates

    def _log_window(self, window: Window) -> None:
        self.run_log.training(
            window,
            update=self.state.updates,
            epoch=self.state.epoch,
            lr=self.updater.lr,
            dropout=self.dropout.p,
            seconds=self.state.seconds,
        )
