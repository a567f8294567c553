"""Learning-rate schedules: constant, inverse square root after warm-up, and halve-on-plateau."""

from __future__ import annotations

import math
from typing import Any

from nmtkit.config import TrainConfig
from nmtkit.errors import unknown_name


class Schedule:
    """Sets the optimizer's learning rate after every update and every validation."""

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        self.base_lr = config.lr
        self.best: float | None = None
        self.bad = 0

    def lr_at(self, update: int) -> float:
        """The learning rate for update number ``update`` (1-based)."""
        warmup = self.config.warmup_updates
        return self.base_lr * (min(1.0, update / warmup) if warmup > 0 else 1.0)

    def after_validation(self, bleu: float) -> None:
        """React to a validation BLEU (only the plateau schedule does)."""

    def state_dict(self) -> dict[str, Any]:
        return {"base_lr": self.base_lr, "best": self.best, "bad": self.bad}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.base_lr, self.best, self.bad = state["base_lr"], state["best"], state["bad"]


class InverseSqrt(Schedule):
    """Linear warm-up, then lr * sqrt(warmup / update) (Vaswani et al., 2017)."""

    def lr_at(self, update: int) -> float:
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


SCHEDULES: dict[str, type[Schedule]] = {
    "constant": Schedule,
    "inverse_sqrt": InverseSqrt,
    "plateau": Plateau,
}


def build_schedule(config: TrainConfig) -> Schedule:
    """The schedule named by ``config.lr_schedule``.

    Raises:
        ConfigError: unknown name.
    """
    if config.lr_schedule not in SCHEDULES:
        raise unknown_name("lr_schedule", config.lr_schedule, SCHEDULES, where="train.lr_schedule")
    return SCHEDULES[config.lr_schedule](config)
