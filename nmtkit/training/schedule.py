"""Learning-rate schedules: constant, inverse square root after warm-up, halve-on-plateau, a
straight line down to the end of a run whose length is known (its time budget, updates or
epochs), and warm-up-stable-decay (constant, then the line over the run's last share); ``auto``
(the default) takes warm-up-stable-decay when the run has a length, else the plateau rule."""

from __future__ import annotations

import math
from typing import Any

from nmtkit.config import TrainConfig
from nmtkit.errors import ConfigError, unknown_name


def run_length_known(config: TrainConfig) -> bool:
    """Whether the run ends at a known point: a time budget, max updates or max epochs."""
    return any(v is not None for v in (config.time_budget, config.max_updates, config.max_epochs))


class Schedule:
    """Sets the optimizer's learning rate before every update and after every validation.

    ``progress`` is the share of the run done before the update, 0 to 1, from whichever of its
    limits (time budget, updates, epochs) is nearest; None when the run has none."""

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        self.base_lr = config.lr
        self.best: float | None = None
        self.bad = 0

    def warmup(self, update: int) -> float:
        """The linear warm-up's factor for update number ``update`` (1-based)."""
        warmup = self.config.warmup_updates
        return min(1.0, update / warmup) if warmup > 0 else 1.0

    def lr_at(self, update: int, progress: float | None = None) -> float:
        """The learning rate for update number ``update`` (1-based)."""
        return self.base_lr * self.warmup(update)

    def after_validation(self, bleu: float) -> None:
        """React to a validation BLEU (only the plateau schedule does)."""

    def state_dict(self) -> dict[str, Any]:
        return {"base_lr": self.base_lr, "best": self.best, "bad": self.bad}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.base_lr, self.best, self.bad = state["base_lr"], state["best"], state["bad"]


class InverseSqrt(Schedule):
    """Linear warm-up, then lr * sqrt(warmup / update) (Vaswani et al., 2017)."""

    def lr_at(self, update: int, progress: float | None = None) -> float:
        warmup = max(1, self.config.warmup_updates)
        return self.base_lr * min(update / warmup, math.sqrt(warmup / max(update, 1)))


class Plateau(Schedule):
    """Multiply the learning rate by ``plateau_factor`` when validation BLEU stops improving."""

    def after_validation(self, bleu: float) -> None:
        if self.best is None or bleu > self.best:
            self.best, self.bad = bleu, 0
            return
        self.bad += 1
        if self.bad >= self.config.plateau_patience:
            self.base_lr = max(self.config.min_lr, self.base_lr * self.config.plateau_factor)
            self.bad = 0


class Linear(Schedule):
    """Warm-up, then a straight line from ``lr`` down to ``min_lr`` at the end of the run.

    With a time budget the line follows the clock, so a run spends its whole budget learning
    and ends annealed, wherever the machine's speed puts the last update (the decay to zero
    that short runs gain most from; Bergsma et al., 2025, "Straight to zero")."""

    def __init__(self, config: TrainConfig) -> None:
        super().__init__(config)
        if not run_length_known(config):
            raise ConfigError(
                f"lr_schedule {config.lr_schedule} decays to the end of the run, which has no end",
                where="train.lr_schedule",
                hint="give --time-budget, --max-updates or --max-epochs, or lr_schedule: plateau",
            )

    def lr_at(self, update: int, progress: float | None = None) -> float:
        left = self.height(min(1.0, max(0.0, progress or 0.0)))
        low = min(self.config.min_lr, self.base_lr)
        return (low + (self.base_lr - low) * left) * self.warmup(update)

    def height(self, done: float) -> float:
        """Where the rate stands between ``min_lr`` (0) and ``lr`` (1) with ``done`` (0 to 1)
        of the run behind it."""
        return 1.0 - done


class WarmupStableDecay(Linear):
    """Warm-up, ``lr`` held until the run's last ``decay_share``, then a straight line down to
    ``min_lr`` at its end (WSD: Hu et al., 2024, "MiniCPM"; Hägele et al., 2024): the whole
    budget but its end at the full learning rate, annealed over the end alone."""

    def height(self, done: float) -> float:
        return min(1.0, (1.0 - done) / self.config.decay_share)


SCHEDULES: dict[str, type[Schedule]] = {
    "linear": Linear,
    "wsd": WarmupStableDecay,
    "plateau": Plateau,
    "inverse_sqrt": InverseSqrt,
    "constant": Schedule,
}


def schedule_name(config: TrainConfig) -> str:
    """The schedule ``config.lr_schedule`` names; ``auto`` is ``wsd`` for a run with a known end
    (a time budget, max updates or max epochs), else ``plateau``. (``wsd`` rather than
    ``linear``: +1.7 validation BLEU at 15 minutes, two seeds, level at 30; docs/quality.md.)"""
    if config.lr_schedule == "auto":
        return "wsd" if run_length_known(config) else "plateau"
    return config.lr_schedule


def build_schedule(config: TrainConfig) -> Schedule:
    """The schedule named by ``config.lr_schedule`` (:func:`schedule_name`).

    Raises:
        ConfigError: unknown name; a schedule that decays to the end of a run without one.
    """
    name = schedule_name(config)
    if name not in SCHEDULES:
        names = ["auto", *SCHEDULES]
        raise unknown_name("lr_schedule", config.lr_schedule, names, where="train.lr_schedule")
    return SCHEDULES[name](config)
