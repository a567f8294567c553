"""Input chunks for a streaming filter: up to ``chunk_size`` lines, or fewer when the input
pauses, so that a program that writes a line and waits for its translation gets it.

A regular file (or stdin redirected from one) is read in full chunks and never waits on a
timer. A pipe, FIFO, terminal or socket is read by a thread into a bounded queue: a chunk ends
at ``chunk_size`` lines, at the end of the input, or when no new line has come for
``flush_ms`` milliseconds. Lines already written into the pipe arrive at once, so a large
pipe still gives full chunks.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import queue
import stat
import sys
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from nmtkit.files import check_line_counts, decode_lines, read_lines

DEFAULT_FLUSH_MS = 10.0  # a pause of this long ends a chunk read from a pipe or a terminal
_PUT_WAIT_S = 0.1  # how often a reader blocked on a full queue checks whether it should stop


@dataclass(frozen=True, slots=True)
class _End:
    """The end of the input, or the error that ended it (raised where the lines are used)."""

    error: BaseException | None = None


def read_prefixes(prefix_path: str | Path) -> list[str]:
    """The target prefixes of a file of one per input line ('' for an empty line: none).

    Raises:
        DataError: the file is missing or not valid UTF-8.
    """
    return [line or "" for line in read_lines(prefix_path)]


def read_with_line_files(
    path: str | Path, line_files: Sequence[tuple[str | Path, int, str]]
) -> Iterable[str]:
    """The lines of ``path`` ('-': stdin), once each file of one line per input line
    (``line_files``: its path, its line count and what to do about a mismatch) is known to have
    as many. A regular input file is read lazily (after counting it); stdin or another pipe is
    read whole, to count it before anything is translated.

    Raises:
        DataError: the input is missing or not valid UTF-8, or a line count differs.
    """
    lines: Iterable[str] = (line or "" for line in read_lines(path))
    if str(path) == "-" or arrives_over_time(path):
        lines = list(lines)  # a pipe is read once: hold it, to count it before translating
        num_lines = len(lines)
    else:
        num_lines = sum(1 for _ in read_lines(path))
    for line_file, count, hint in line_files:
        check_line_counts(line_file, count, path, num_lines, hint=hint)
    return lines


def arrives_over_time(path: str | Path) -> bool:
    """Whether reading ``path`` ('-': stdin) may wait for lines not written yet: a pipe, FIFO,
    terminal or socket. False for a regular file, in-memory stdin, or a path that cannot be
    looked at (reading it then reports why)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode if str(path) == "-" else os.stat(path).st_mode
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return not stat.S_ISREG(mode)


def read_chunks(
    path: str | Path, *, chunk_size: int, flush_ms: float = DEFAULT_FLUSH_MS
) -> Iterator[list[str]]:
    """Yield the lines of ``path`` ('-': stdin; '.gz' read) in chunks of at most
    ``chunk_size``; from a pipe or a terminal a chunk also ends once no line has come for
    ``flush_ms`` milliseconds (0: take only the lines already there).

    Raises:
        DataError: the input is missing or a line is not valid UTF-8, naming the line
            (:func:`~nmtkit.files.read_lines`).
    """
    if not arrives_over_time(path):
        lines = (line or "" for line in read_lines(path))
        while chunk := list(itertools.islice(lines, chunk_size)):
            yield chunk
        return
    yield from _paced_chunks(_own_lines(path), chunk_size=chunk_size, pause_s=flush_ms / 1000)


def _own_lines(path: str | Path) -> Generator[str, None, None]:
    """The lines of ``path`` through a reader of their own. Stdin is read from a duplicate of
    its descriptor, not through ``sys.stdin``: a thread blocked in ``sys.stdin``'s reader
    holds its lock, and the interpreter's shutdown, which closes ``sys.stdin``, would abort."""
    if str(path) != "-":
        yield from (line or "" for line in read_lines(path))
        return
    with os.fdopen(os.dup(sys.stdin.fileno()), "rb") as stream:
        yield from (line or "" for line in decode_lines(stream, "<stdin>"))


def _paced_chunks(
    lines: Generator[str, None, None], *, chunk_size: int, pause_s: float
) -> Iterator[list[str]]:
    """Chunks of ``lines``, read by a thread, that end at ``chunk_size`` lines or a pause."""
    # Bounded: the reader stays at most a chunk ahead, however long the input.
    arrived: queue.Queue[str | _End] = queue.Queue(maxsize=chunk_size)
    stop = threading.Event()
    reader = threading.Thread(
        target=_read_into, args=(lines, arrived, stop), name="nmtkit-input", daemon=True
    )
    reader.start()
    try:
        while True:
            item = arrived.get()  # the first line of a chunk: wait as long as it takes
            chunk: list[str] = []
            while isinstance(item, str):
                chunk.append(item)
                if len(chunk) >= chunk_size:
                    break
                try:
                    item = arrived.get(timeout=pause_s) if pause_s > 0 else arrived.get_nowait()
                except queue.Empty:
                    break
            if isinstance(item, _End) and item.error is not None:
                raise item.error
            if chunk:
                yield chunk
            if isinstance(item, _End):
                return
    finally:
        # A reader blocked on reading its input stays so until the input ends: it is a daemon
        # thread, so it never keeps the process alive.
        stop.set()


def _read_into(
    lines: Generator[str, None, None], arrived: queue.Queue[str | _End], stop: threading.Event
) -> None:
    """Put every line into ``arrived``, then an :class:`_End` (with the error, if any); once
    the consumer has stopped, close the input at the next line."""
    end = _End()
    with contextlib.closing(lines):
        try:
            for line in lines:
                if not _put(arrived, line, stop):
                    return
        except BaseException as exc:  # handed to the consumer, which raises it as its own
            end = _End(error=exc)
    _put(arrived, end, stop)


def _put(arrived: queue.Queue[str | _End], item: str | _End, stop: threading.Event) -> bool:
    """Put ``item`` once there is room; False if the consumer stopped first."""
    while not stop.is_set():
        try:
            arrived.put(item, timeout=_PUT_WAIT_S)
            return True
        except queue.Full:
            continue
    return False
