"""The training loop's small helpers: the update window behind log lines and progress, and a
Ctrl-C that stops after the current update."""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

log = logging.getLogger(__name__)


class CtrlC:
    """The first Ctrl-C only sets ``pressed`` (the loop stops after the update); a second one
    interrupts at once. Outside the main thread signals cannot be caught, and nothing changes."""

    def __init__(self) -> None:
        self.pressed = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True
        log.warning("Ctrl-C: stopping after this update (press again to abort)")

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


class Window:
    """Sums over the updates since the last log line."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.loss_sum = self.nll_sum = 0.0
        self.tokens = 0
        self.last_loss = float("nan")

    def add(self, loss: float, nll: float, tokens: int) -> None:
        self.loss_sum += loss
        self.nll_sum += nll
        self.tokens += tokens
        self.last_loss = loss / max(tokens, 1)

    @property
    def loss(self) -> float:
        return self.loss_sum / max(self.tokens, 1)

    @property
    def nll(self) -> float:
        return self.nll_sum / max(self.tokens, 1)

    @property
    def rate(self) -> float:
        return self.tokens / max(time.monotonic() - self.started, 1e-9)
