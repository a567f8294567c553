"""What a training run reports: sums over the updates since the last log line, the progress bar,
and the train and validation records that rank 0 appends to ``metrics.jsonl`` and ``train.log``
and logs (and, with ``train.tensorboard``, writes as TensorBoard scalars)."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.progress import Progress, TaskID

from nmtkit import checkpoint as ckpt
from nmtkit.console import progress
from nmtkit.outputs import writing
from nmtkit.scoring.metrics import MetricScore
from nmtkit.training.distributed import Distributed
from nmtkit.training.tensorboard import TensorBoardLog

log = logging.getLogger(__name__)


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


class RunLog:
    """``metrics.jsonl`` (one JSON record a line) and ``train.log`` (the same as ``key=value``
    words) in the model directory, and while :meth:`tensorboard` is open the same records as
    TensorBoard scalars. The records keep the key ``step`` for the update."""

    def __init__(self, model_dir: Path, dist: Distributed) -> None:
        self.model_dir, self.dist = model_dir, dist
        self._tensorboard: TensorBoardLog | None = None

    @contextlib.contextmanager
    def tensorboard(self, log_dir: str | Path | None, *, after: int) -> Iterator[None]:
        """While open, rank 0 also writes every record to TensorBoard in ``log_dir`` (None:
        nothing), closing it however the block ends. ``after``: the update the run starts after
        (0: a fresh run, whose log starts over); TensorBoard hides the events already in
        ``log_dir`` from the next update on, which a killed run may have logged after its save.

        Raises:
            ConfigError: the ``tensorboard`` extra is not installed.
        """
        if log_dir is None or not self.dist.is_main:
            yield
            return
        board = TensorBoardLog(Path(log_dir), purge_step=after + 1 if after else 0)
        self._tensorboard = board
        try:
            yield
        finally:
            self._tensorboard = None
            board.close()

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` to both files, log it, and write it to TensorBoard if open: rank 0
        alone."""
        if not self.dist.is_main:
            return
        line = " ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items()
        )
        for path, text in (
            (self.model_dir / ckpt.METRICS, json.dumps(record)),
            (self.model_dir / ckpt.LOG, line),
        ):
            with writing(path), open(path, "a", encoding="utf-8") as stream:
                stream.write(text + "\n")
        if self._tensorboard is not None:
            self._tensorboard.write(record)
        log.info("%s", line)

    def training(
        self,
        window: Window,
        *,
        update: int,
        epoch: int,
        lr: float,
        seconds: float,
        dropout: float | None = None,
    ) -> None:
        """Every rank: the window's loss summed over the ranks; rank 0 writes it."""
        loss_sum, nll_sum = self.dist.all_reduce([window.loss_sum, window.nll_sum])
        tokens, updates = max(window.global_tokens, 1), max(window.updates, 1)
        nll = nll_sum / tokens
        self.write(
            {
                "kind": "train",
                "step": update,
                "epoch": epoch,
                "loss": loss_sum / tokens,
                "nll": nll,
                "ppl": math.exp(min(nll, 50.0)),
                "lr": lr,
                "dropout": dropout,
                "tok_s": window.rate,  # target tokens per second, all ranks together
                "tokens_per_update": window.global_tokens / updates,
                "sentences_per_update": window.sentences / updates,
                "seconds": round(seconds, 1),
            }
        )

    def validation(
        self, *, update: int, val_nll: float, bleu: MetricScore, best: float | None
    ) -> None:
        """Rank 0: one validation's loss and BLEU, and the best BLEU so far."""
        self.write(
            {
                "kind": "valid",
                "step": update,
                "val_loss": val_nll,
                "val_ppl": math.exp(min(val_nll, 50.0)),
                "val_bleu": bleu.score,
                "best": best,
                "signature": bleu.signature,
            }
        )


class ProgressBar:
    """The progress bar of training, in updates (loss, learning rate, tokens per second)."""

    def __init__(self, bar: Progress, task: TaskID) -> None:
        self.bar, self.task = bar, task

    def show(self, window: Window, *, update: int, epoch: int, lr: float) -> None:
        """Show the run after update ``update``: the window's last loss and rate."""
        self.bar.update(
            self.task,
            completed=update,
            description=f"epoch {epoch}",
            loss=f"{window.last_loss:.3f}",
            lr=f"{lr:.2g}",
            tok_s=f"{window.rate:.0f}",
        )


@contextlib.contextmanager
def progress_bar(*, total: int | None, done: int, show: bool = True) -> Iterator[ProgressBar]:
    """A bar of ``total`` updates (None: unknown), ``done`` of them already made; only where
    ``show`` (rank 0) and on a terminal."""
    with progress("loss", "lr", "tok_s", show=show) as bar:
        task = bar.add_task("train", total=total, completed=done, loss="-", lr="-", tok_s="-")
        yield ProgressBar(bar, task)
