"""Input chunks: a file in full chunks, a pipe's chunk ends when the input pauses, errors name
the line. FIFO writers close their end on every path, so no test can hang."""

from __future__ import annotations

import contextlib
import errno
import gzip
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nmtkit.errors import DataError
from nmtkit.translation.streaming import arrives_over_time, read_chunks

WAIT_S = 60  # the most a FIFO writer waits for the reader (a broken reader ends the test)


def open_writer(fifo: Path) -> int:
    """Open ``fifo`` for writing once a reader has opened it (at most :data:`WAIT_S`)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: no reader yet
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
            continue
        os.set_blocking(fd, True)
        return fd


@contextlib.contextmanager
def fifo_writer(fifo: Path, script: Callable[[int], None]) -> Iterator[threading.Thread]:
    """Run ``script(fd)`` on a thread that writes into ``fifo``, closing it whatever happens."""

    def write() -> None:
        fd = open_writer(fifo)
        try:
            script(fd)
        finally:
            os.close(fd)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    yield thread
    thread.join(WAIT_S)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "input.fifo"
    os.mkfifo(path)
    return path


def test_a_file_is_read_in_full_chunks_and_never_waits(tmp_path: Path) -> None:
    plain, packed = tmp_path / "in.txt", tmp_path / "in.txt.gz"
    text = "".join(f"line {i}\n" for i in range(7))
    plain.write_text(text, "utf-8")
    with gzip.open(packed, "wt", encoding="utf-8") as stream:
        stream.write(text)
    for path in (plain, packed):
        assert not arrives_over_time(path)
        chunks = list(read_chunks(path, chunk_size=3, flush_ms=10_000))
        assert [len(chunk) for chunk in chunks] == [3, 3, 1]
        assert chunks[2] == ["line 6"]


def test_a_pipe_chunk_ends_when_the_input_pauses(fifo: Path) -> None:
    got_first = threading.Event()

    def script(fd: int) -> None:
        os.write(fd, b"a b\nc d\ne f\n")  # one write: all three have arrived together
        got_first.wait(WAIT_S)
        os.write(fd, b"g h\n")

    assert arrives_over_time(fifo)
    chunks = []
    with fifo_writer(fifo, script):
        for chunk in read_chunks(fifo, chunk_size=100, flush_ms=300):
            chunks.append(chunk)
            got_first.set()
    assert chunks == [["a b", "c d", "e f"], ["g h"]]


def test_a_pipe_chunk_ends_at_the_chunk_size_however_fast_lines_come(fifo: Path) -> None:
    def script(fd: int) -> None:
        os.write(fd, "".join(f"{i}\n" for i in range(10)).encode())

    with fifo_writer(fifo, script):
        chunks = list(read_chunks(fifo, chunk_size=4, flush_ms=2_000))
    assert chunks == [["0", "1", "2", "3"], ["4", "5", "6", "7"], ["8", "9"]]


def test_flush_ms_zero_takes_what_has_come_and_loses_nothing(fifo: Path) -> None:
    def script(fd: int) -> None:
        for i in range(20):
            os.write(fd, f"{i}\n".encode())

    with fifo_writer(fifo, script):
        chunks = list(read_chunks(fifo, chunk_size=6, flush_ms=0))
    assert [line for chunk in chunks for line in chunk] == [str(i) for i in range(20)]
    assert all(1 <= len(chunk) <= 6 for chunk in chunks)


def test_invalid_utf8_from_a_pipe_names_the_line(fifo: Path) -> None:
    def script(fd: int) -> None:
        os.write(fd, b"fine\n\xff\xfe broken\nnever read\n")

    with fifo_writer(fifo, script), pytest.raises(DataError) as caught:
        list(read_chunks(fifo, chunk_size=10, flush_ms=50))
    assert f"{fifo}:2" in str(caught.value)
    assert "invalid UTF-8" in str(caught.value)


def test_a_consumer_that_stops_early_closes_the_input(fifo: Path) -> None:
    """The writer sends far more than a pipe holds: it ends only if the reader closes."""

    def script(fd: int) -> None:
        with contextlib.suppress(BrokenPipeError):
            for i in range(200_000):
                os.write(fd, f"{i}\n".encode())

    with fifo_writer(fifo, script) as writer:
        chunks = read_chunks(fifo, chunk_size=2, flush_ms=50)
        assert next(chunks) == ["0", "1"]
        chunks.close()
    assert not writer.is_alive()
