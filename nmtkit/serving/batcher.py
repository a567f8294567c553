"""Dynamic batching: sentences of concurrent requests, gathered for a few milliseconds and
decoded together by one worker thread, the only thread that runs the model.

Requests are grouped by a key (their search settings): only requests with equal keys share a
batch. The oldest waiting request decides: its group is decoded once it has waited
``wait_s``, or at once when the group holds ``max_batch_sentences``; the group's requests are
taken whole, oldest first. Nothing here knows HTTP or torch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
S = TypeVar("S")  # one sentence as ``decode`` takes it (the server: its text and prefix)
R = TypeVar("R")


class QueueFull(Exception):
    """Taking a request would put more than ``max_queue`` sentences in the queue."""

    def __init__(self, *, queued: int, asked: int, max_queue: int) -> None:
        super().__init__(
            f"the server is busy: {queued} sentences are queued and {asked} more would go over "
            f"its limit of {max_queue}; try again shortly"
        )


class BatcherClosed(Exception):
    """The batcher is shutting down and takes no new requests."""

    def __init__(self) -> None:
        super().__init__("the server is shutting down")


@dataclass(frozen=True, kw_only=True, slots=True)
class BatcherStats:
    """``queued``: sentences accepted and not yet answered (waiting or being decoded);
    ``batches`` and ``sentences``: decoded so far."""

    queued: int
    batches: int
    sentences: int


@dataclass(kw_only=True, slots=True)
class _Request(Generic[K, S, R]):
    key: K
    sentences: list[S]
    future: Future[list[R]]
    arrival: float


class Batcher(Generic[K, S, R]):
    """Decode the sentences of many requests in shared batches on one worker thread.

    Args:
        decode: translates one batch: ``decode(key, sentences)`` returns one result per
            sentence, in order. It runs on the worker thread only. When it fails on a batch
            of several requests, each is decoded alone, so that an exception reaches only
            the requests that raise it.
        wait_s: how long the oldest request waits for company.
        max_batch_sentences: the most sentences in one batch (a larger request goes alone).
        max_queue: the most sentences accepted and not yet answered.
    """

    def __init__(
        self,
        decode: Callable[[K, list[S]], Sequence[R]],
        *,
        wait_s: float,
        max_batch_sentences: int,
        max_queue: int,
    ) -> None:
        self._decode = decode
        self._wait_s = wait_s
        self._max_batch = max_batch_sentences
        self._max_queue = max_queue
        self._cond = threading.Condition()
        self._pending: list[_Request[K, S, R]] = []
        self._queued = 0
        self._batches = 0
        self._sentences = 0
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="nmtkit-decode", daemon=True)

    def start(self) -> None:
        """Start the worker thread."""
        self._thread.start()

    def submit(self, key: K, sentences: Sequence[S]) -> Future[list[R]]:
        """Queue one request; its future gets one result per sentence, in order.

        Raises:
            QueueFull: the request would take the queue over ``max_queue`` sentences.
            BatcherClosed: :meth:`close` was called.
        """
        future: Future[list[R]] = Future()
        if not sentences:
            future.set_result([])
            return future
        with self._cond:
            if self._closed:
                raise BatcherClosed()
            if self._queued + len(sentences) > self._max_queue:
                raise QueueFull(
                    queued=self._queued, asked=len(sentences), max_queue=self._max_queue
                )
            self._queued += len(sentences)
            request = _Request(
                key=key, sentences=list(sentences), future=future, arrival=time.monotonic()
            )
            self._pending.append(request)
            self._cond.notify()
        return future

    def close(self, *, drop_queued: bool = False) -> None:
        """Take no new requests; the worker decodes what is queued, at once, and stops.
        With ``drop_queued`` the requests not yet being decoded are cancelled instead."""
        with self._cond:
            self._closed = True
            if drop_queued:
                for request in self._pending:
                    request.future.cancel()
                    self._queued -= len(request.sentences)
                self._pending.clear()
            self._cond.notify()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker to stop (after :meth:`close`); return whether it has."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def stats(self) -> BatcherStats:
        with self._cond:
            return BatcherStats(
                queued=self._queued, batches=self._batches, sentences=self._sentences
            )

    def _work(self) -> None:
        while (batch := self._next_batch()) is not None:
            key, requests = batch
            if requests:  # none when every caller of the batch gave up
                self._run(key, requests)

    def _next_batch(self) -> tuple[K, list[_Request[K, S, R]]] | None:
        """Block until a batch is due (None: closed and nothing left) and take it."""
        with self._cond:
            while True:
                if not self._pending:
                    if self._closed:
                        return None
                    self._cond.wait()
                    continue
                oldest = self._pending[0]
                group = sum(len(r.sentences) for r in self._pending if r.key == oldest.key)
                wait = oldest.arrival + self._wait_s - time.monotonic()
                if wait > 0 and group < self._max_batch and not self._closed:
                    self._cond.wait(wait)
                    continue
                return oldest.key, self._take(oldest.key)

    def _take(self, key: K) -> list[_Request[K, S, R]]:
        """Remove the requests of ``key`` that fit in one batch, oldest first (the first
        always), and drop those whose caller has given up."""
        taken: list[_Request[K, S, R]] = []
        size = 0
        for request in list(self._pending):
            if request.key != key or (taken and size + len(request.sentences) > self._max_batch):
                continue
            self._pending.remove(request)
            if not request.future.set_running_or_notify_cancel():
                self._queued -= len(request.sentences)
                continue
            taken.append(request)
            size += len(request.sentences)
        return taken

    def _run(self, key: K, requests: list[_Request[K, S, R]]) -> None:
        """Decode the requests as one batch; if that fails, each alone, so that one request
        that breaks the decoder fails only itself."""
        sentences = [sentence for request in requests for sentence in request.sentences]
        try:
            results = self._decode_checked(key, sentences)
        except Exception as exc:  # the callers report it
            if len(requests) == 1:
                requests[0].future.set_exception(exc)
            else:
                log.warning(
                    "a batch of %d requests failed (%s): decoding each alone", len(requests), exc
                )
                for request in requests:
                    self._run_alone(key, request)
        else:
            start = 0
            for request in requests:
                end = start + len(request.sentences)
                request.future.set_result(results[start:end])
                start = end
        finally:
            with self._cond:
                self._queued -= len(sentences)
                self._batches += 1
                self._sentences += len(sentences)
        log.debug("decoded %d requests, %d sentences, as one batch", len(requests), len(sentences))

    def _run_alone(self, key: K, request: _Request[K, S, R]) -> None:
        try:
            request.future.set_result(self._decode_checked(key, request.sentences))
        except Exception as exc:
            request.future.set_exception(exc)

    def _decode_checked(self, key: K, sentences: list[S]) -> list[R]:
        results = list(self._decode(key, sentences))
        if len(results) != len(sentences):
            raise RuntimeError(f"decoded {len(results)} results for {len(sentences)} inputs")
        return results
