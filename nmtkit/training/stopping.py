"""When training stops: the stop signals (Ctrl-C, SIGTERM) that end a run after the current
update, and the rules a run stops by (early stopping, max updates and epochs, the time budget),
asked after every update and of a resumed run that already ended."""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass
from typing import Any

from nmtkit.config import TrainConfig
from nmtkit.errors import Interrupted
from nmtkit.training.distributed import Distributed
from nmtkit.training.train_state import RunState

log = logging.getLogger(__name__)

# SIGINT is Ctrl-C; SIGTERM is how schedulers (SLURM, Kubernetes, torchrun) stop a job.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# What to change to continue a run that ended by each rule.
CONTINUE_HINTS = {
    "early_stopping": "raise train.patience, or set it to 0",
    "max_updates": "raise --max-updates",
    "max_epochs": "raise --max-epochs",
    "time_budget": "raise --time-budget",
}


def signal_name(signum: int) -> str:
    """``Ctrl-C (SIGINT)`` or the signal's name, e.g. ``SIGTERM``."""
    name = signal.Signals(signum).name
    return f"Ctrl-C ({name})" if signum == signal.SIGINT else name


class StopSignals:
    """The first SIGINT or SIGTERM only sets ``signum`` (the loop stops after the update and
    saves); a second one raises :class:`Interrupted` at once. Outside the main thread signals
    cannot be caught, and nothing changes."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    @property
    def received(self) -> bool:
        return self.signum is not None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            log.warning("%s again: aborting without saving", signal_name(signum))
            raise Interrupted(signum)
        self.signum = signum
        log.warning(
            "%s: stopping after this update and saving (send it again to abort)",
            signal_name(signum),
        )

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            if handler is not None:  # None: a handler not set from Python, which cannot be put back
                signal.signal(signum, handler)
        self._previous.clear()


@dataclass(frozen=True, slots=True)
class Alarm:
    """What every rank learns after an update: a stop signal on any rank (0: none), whether
    rank 0's clock has run past the time budget, and rank 0's training seconds (the clock the
    budget and the learning-rate schedule read, the same on every rank)."""

    signum: int
    out_of_time: bool
    seconds: float


class StopRules:
    """The stopping rules of ``train``: the same answer on every rank."""

    def __init__(self, config: TrainConfig, dist: Distributed) -> None:
        self.config, self.dist = config, dist

    def poll(self, signals: StopSignals, *, seconds: float) -> Alarm:
        """Every rank, after every update: a signal received on any of them, and rank 0's time
        budget (its clock alone counts, so that all ranks stop at the same update)."""
        budget = self.config.time_budget
        out_of_time = budget is not None and seconds >= budget * 60
        main = self.dist.is_main
        signum, out_of_time_main, main_seconds = self.dist.all_reduce(
            [signals.signum or 0, out_of_time and main, seconds if main else 0.0], op="max"
        )
        return Alarm(signum=int(signum), out_of_time=bool(out_of_time_main), seconds=main_seconds)

    def progress(self, state: RunState, *, epoch_batches: int) -> float | None:
        """The share of the run done, 0 to 1, by the limit nearest its end (the time budget,
        max updates, max epochs); None for a run without one. ``epoch_batches``: the batches of
        the current epoch."""
        cfg = self.config
        shares = []
        if cfg.time_budget is not None:
            shares.append(state.seconds / (cfg.time_budget * 60))
        if cfg.max_updates is not None:
            shares.append(state.updates / cfg.max_updates)
        if cfg.max_epochs is not None:
            shares.append(state.epochs_done(epoch_batches) / cfg.max_epochs)
        return min(1.0, max(shares)) if shares else None

    def patience_ran_out(self, state: RunState) -> bool:
        """Early stopping: ``train.patience`` validations in a row without a better BLEU."""
        patience = self.config.patience
        return patience > 0 and state.bad_validations >= patience

    def max_updates_reached(self, state: RunState) -> bool:
        return self.config.max_updates is not None and state.updates >= self.config.max_updates

    def limit_reached(self, state: RunState, *, validates: bool) -> str | None:
        """For a restored run that ended (not one interrupted): the stopping rule it still meets
        under this config, the one it stopped by first; None if a raised limit lets it go on.
        ``validates``: the data has a validation set (without one nothing stops early)."""
        cfg = self.config
        if state.stop_reason is None:
            return None
        met = {
            "early_stopping": validates and self.patience_ran_out(state),
            "max_updates": self.max_updates_reached(state),
            "max_epochs": cfg.max_epochs is not None and state.epoch > cfg.max_epochs,
            "time_budget": cfg.time_budget is not None and state.seconds >= cfg.time_budget * 60,
        }
        order = [state.stop_reason, *met] if state.stop_reason in met else list(met)
        return next((reason for reason in order if met[reason]), None)
