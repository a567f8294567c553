"""Validation during training (loss and greedy BLEU) and the loop's small helpers: the update
window behind log lines and progress, and a Ctrl-C that stops after the current update."""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

import torch

from nmtkit.config import SearchConfig
from nmtkit.data.text import TextPipeline
from nmtkit.evaluate import MetricScore, corpus_bleu
from nmtkit.models import Seq2Seq
from nmtkit.registry import get
from nmtkit.runtime import autocast
from nmtkit.training.data import ParallelSplit
from nmtkit.translate import decode_sequences

log = logging.getLogger(__name__)


def validation_nll(
    model: Seq2Seq, valid: ParallelSplit, *, max_tokens: int, precision: str = "fp32"
) -> float:
    """Mean negative log-likelihood per target token (EOS included) under teacher forcing."""
    model.eval()
    total, tokens = 0.0, 0
    device = next(model.parameters()).device
    with torch.inference_mode(), autocast(precision, device):
        for indices in valid.batches(max_tokens=max_tokens):
            batch = valid.batch(indices)
            _, nll = model.loss(batch)
            total += float(nll)
            tokens += batch.num_tgt_tokens
    return total / max(tokens, 1)


def validation_bleu(
    model: Seq2Seq,
    valid: ParallelSplit,
    refs: list[str],
    tgt_text: TextPipeline,
    search: SearchConfig,
) -> MetricScore:
    """Detokenized sacreBLEU of greedy translations of the validation sources."""
    greedy = get("search", "greedy")
    hyps = decode_sequences(
        model,
        [valid.src[i].tolist() for i in range(len(valid))],
        greedy(greedy.Config()),
        batch_size=search.batch_size,
        max_len_a=search.max_len_a,
        max_len_b=search.max_len_b,
        precision=search.precision,
    )
    texts = [tgt_text.decode(h[0].tokens) if h else "" for h in hyps]
    return corpus_bleu(texts, refs)


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
