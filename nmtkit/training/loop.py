"""The training loop's small helpers: the update window behind log lines and progress, and the
stop signals (Ctrl-C, SIGTERM) that end a run after the current update."""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

from nmtkit.errors import Interrupted

log = logging.getLogger(__name__)

# SIGINT is Ctrl-C; SIGTERM is how schedulers (SLURM, Kubernetes, torchrun) stop a job.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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


class Window:
    """Sums over the updates since the last log line: this rank's loss and NLL over its own
    target tokens, and the global batch's tokens and sentences (all ranks) for throughput."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.loss_sum = self.nll_sum = 0.0
        self.tokens = self.global_tokens = self.sentences = self.updates = 0
        self.last_loss = float("nan")

    def add(
        self,
        loss: float,
        nll: float,
        tokens: int,
        *,
        global_tokens: int | None = None,
        sentences: int = 0,
    ) -> None:
        """One update: this rank's summed loss and NLL over its ``tokens``; ``global_tokens``
        (default ``tokens``) and ``sentences`` of the whole update."""
        self.loss_sum += loss
        self.nll_sum += nll
        self.tokens += tokens
        self.global_tokens += tokens if global_tokens is None else global_tokens
        self.sentences += sentences
        self.updates += 1
        self.last_loss = loss / max(tokens, 1)

    @property
    def loss(self) -> float:
        return self.loss_sum / max(self.tokens, 1)

    @property
    def nll(self) -> float:
        return self.nll_sum / max(self.tokens, 1)

    @property
    def rate(self) -> float:
        """Target tokens per second of the whole update (all ranks)."""
        return self.global_tokens / max(time.monotonic() - self.started, 1e-9)
