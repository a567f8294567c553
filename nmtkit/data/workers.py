"""Worker processes for ``preprocess``: chunks of lines prepared, cleaned and encoded in corpus
order, with a bounded number of chunks in flight, so that memory does not grow with the corpus."""

from __future__ import annotations

import functools
import itertools
import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import sentencepiece as spm

from nmtkit.data.dedup import pair_digests
from nmtkit.data.text import CleanSettings, TextPreparer, TextSettings, clean_reason
from nmtkit.errors import ConfigError, NmtkitError

CHUNK_LINES = 10_000  # lines (or pairs) per task: large enough that pickling them is cheap
_IN_FLIGHT = 2  # chunks queued per worker: each finds the next one waiting

T = TypeVar("T")
R = TypeVar("R")


def resolve_workers(workers: int) -> int:
    """Return how many processes ``workers`` asks for: itself, or for 0 the usable CPU cores.

    Raises:
        ConfigError: a negative number.
    """
    if workers < 0:
        raise ConfigError("workers must be 0 (one per CPU core) or more", where="workers")
    if workers:
        return workers
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def chunked(items: Iterable[T], size: int | None = None) -> Iterator[list[T]]:
    """Yield lists of ``size`` items (``CHUNK_LINES`` by default), the last one shorter."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size or CHUNK_LINES)):
        yield chunk


class ChunkPool:
    """Apply functions to chunks in ``workers`` processes and yield the results in order.

    With one worker everything runs in this process. More are *spawned*, not forked: a fresh
    interpreter inherits no threads and no locks held by them (torch's thread pools, the
    refresh thread of the progress bar), and behaves the same on Linux and macOS; the price,
    about two seconds to import nmtkit in each, is paid once per pool. Workers ignore SIGINT,
    so that Ctrl-C reaches this process alone and it cancels the queued chunks.

    Raises:
        NmtkitError: a worker process died (killed, or out of memory), or could not start: a
            spawned worker imports the main script again, which must not call preprocess at
            import time.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._executor: ProcessPoolExecutor | None = None
        if workers > 1:
            self._executor = ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_ignore_interrupts,
            )

    def __enter__(self) -> ChunkPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)

    def map(self, function: Callable[[T], R], chunks: Iterable[T]) -> Iterator[R]:
        """Yield ``function(chunk)`` for each chunk, in order, at most two chunks a worker
        ahead of the one yielded (``Executor.map`` would read every chunk first)."""
        if self._executor is None:
            yield from map(function, chunks)
            return
        pending: deque[Future[R]] = deque()
        try:
            for chunk in chunks:
                pending.append(self._executor.submit(function, chunk))
                if len(pending) >= _IN_FLIGHT * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool:
            raise NmtkitError(
                "a preprocess worker process died: killed, out of memory, or it could not "
                "start (a script that calls preprocess needs `if __name__ == '__main__':`)",
                hint="run with fewer --workers",
            ) from None
        finally:
            for future in pending:
                future.cancel()


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass(frozen=True, slots=True)
class PreparedChunk:
    """A chunk of training pairs, prepared and filtered by ``clean_reason``.

    Attributes:
        num_pairs: pairs in the chunk, kept or not.
        counts: pairs dropped, by reason.
        src: prepared source lines of the pairs kept, in corpus order.
        tgt: prepared target lines of the same pairs.
        digests: uint64 digests of the pairs kept [len(src)], for deduplication.
    """

    num_pairs: int
    counts: dict[str, int]
    src: list[str]
    tgt: list[str]
    digests: np.ndarray


def prepare_pairs(
    pairs: list[tuple[str | None, str | None]],
    *,
    text: TextSettings,
    langs: tuple[str, str],
    clean: CleanSettings,
) -> PreparedChunk:
    """Prepare raw pairs (None for a side that is not UTF-8) and filter them."""
    src_preparer, tgt_preparer = (_preparer(text, lang) for lang in langs)
    counts: dict[str, int] = {}
    kept_src: list[str] = []
    kept_tgt: list[str] = []
    for src, tgt in pairs:
        src_prep = None if src is None else src_preparer.prepare(src)
        tgt_prep = None if tgt is None else tgt_preparer.prepare(tgt)
        reason = clean_reason(src_prep, tgt_prep, clean)
        if reason is None:
            assert src_prep is not None and tgt_prep is not None
            kept_src.append(src_prep)
            kept_tgt.append(tgt_prep)
        else:
            counts[reason] = counts.get(reason, 0) + 1
    return PreparedChunk(
        num_pairs=len(pairs),
        counts=counts,
        src=kept_src,
        tgt=kept_tgt,
        digests=pair_digests(kept_src, kept_tgt),
    )


def encode_lines(lines: list[str], *, model_path: str, stamp: int) -> tuple[np.ndarray, np.ndarray]:
    """Encode prepared lines with the SentencePiece model at ``model_path`` (``stamp``: its
    modification time, so that a rewritten model is reloaded).

    Returns:
        All ids back to back, int32 [sum(lengths)], and each line's count of ids, int64 [n].
    """
    return _flatten(_processor(model_path, stamp).encode(lines))


def sample_lines(
    chunk: tuple[int, list[str]],
    *,
    model_path: str,
    stamp: int,
    alpha: float,
    seed: Sequence[int],
    max_pieces: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Encode the chunk (its index and its prepared lines) with a segmentation sampled by
    SentencePiece (``enable_sampling``: BPE-dropout with probability ``alpha`` for a BPE model,
    the unigram model's distribution smoothed by ``alpha``), a pure function of ``seed`` and the
    chunk's index, whichever process encodes it. A sample of more than ``max_pieces`` ids is
    replaced by the one-best segmentation, so that the pairs kept in the one-best data are kept
    here too.

    Returns:
        As :func:`encode_lines`.
    """
    index, lines = chunk
    processor = _processor(model_path, stamp)
    chunk_seed = int(np.random.SeedSequence([*seed, index]).generate_state(1)[0])
    sampled = _in_fresh_thread(
        lambda: processor.encode(
            lines, enable_sampling=True, alpha=alpha, nbest_size=-1, num_threads=1
        ),
        seed=chunk_seed,
    )
    encoded = [
        ids if len(ids) <= max_pieces else processor.encode(line)
        for ids, line in zip(sampled, lines, strict=True)
    ]
    return _flatten(encoded)


def _in_fresh_thread(work: Callable[[], R], *, seed: int) -> R:
    """Run ``work`` in a new thread whose SentencePiece random generator starts from ``seed``.

    SentencePiece draws samples from a generator of each thread's own, seeded from the global
    seed on the thread's first draw and never again: in a thread that has drawn before, setting
    the seed changes nothing. A new thread starts from the seed, whichever process runs it.
    """
    results: list[R] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            spm.set_random_generator_seed(seed)
            results.append(work())
        except BaseException as exc:  # handed back to the calling thread
            errors.append(exc)

    thread = threading.Thread(target=run, name="nmtkit-subword-sampling")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]


def _flatten(encoded: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    ids = np.fromiter(
        itertools.chain.from_iterable(encoded), dtype=np.int32, count=int(lengths.sum())
    )
    return ids, lengths


@functools.lru_cache(maxsize=4)
def _preparer(settings: TextSettings, lang: str) -> TextPreparer:
    return TextPreparer(settings, lang)


@functools.lru_cache(maxsize=2)
def _processor(path: str, stamp: int) -> spm.SentencePieceProcessor:
    del stamp  # part of the cache key only
    return spm.SentencePieceProcessor(model_file=path)
