"""`nmtkit translate` answers each line as soon as its input pauses, through a pipe and a FIFO,
with the default chunk size: the test sends a line only after reading the last one's
translation, and the whole is what translating the file in one go gives. Every wait has a
deadline, and the process is killed on the way out, so no test can hang."""

from __future__ import annotations

import errno
import os
import select
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.runs import Invoke
from tests.cli.test_cli import BIN_DIR, out_lines
from tests.cli.test_cli_errors import write_lines
from tests.processes import spawn

WAIT_S = 120.0  # the most any one answer may take (a model load included)


def read_line(fd: int, deadline: float) -> bytes:
    """One line from ``fd``, byte by byte, before ``deadline`` (time.monotonic)."""
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        assert ready, f"no full line came in time (got {line!r})"
        byte = os.read(fd, 1)
        assert byte, f"the output ended inside a line (got {line!r})"
        line += byte
    return line


@contextmanager
def running(args: list[str], *, stdin: int | None) -> Iterator[subprocess.Popen[bytes]]:
    """``nmtkit ARGS`` with stdout on a pipe, killed if it is still running at the end."""
    process = spawn(
        [str(BIN_DIR / "nmtkit"), *args, "--threads", "1", "-q"],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=WAIT_S)
        assert process.stdout is not None
        process.stdout.close()


def ping_pong(process: subprocess.Popen[bytes], send: Callable[[bytes], None], lines: list[str]):
    """Send each line only after reading the previous one's translation; return them all."""
    assert process.stdout is not None
    out = process.stdout.fileno()
    answers = []
    for line in lines:
        send(f"{line}\n".encode())
        answers.append(read_line(out, time.monotonic() + WAIT_S).decode("utf-8"))
    return answers


def open_fifo_writer(fifo: Path, deadline: float) -> int:
    """Open ``fifo`` for writing once the reader (translate, after its model loads) has."""
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: no reader yet
            assert exc.errno == errno.ENXIO and time.monotonic() < deadline, exc
            time.sleep(0.02)
            continue
        os.set_blocking(fd, True)
        return fd


@pytest.fixture(scope="module")
def lines(val_pairs: tuple[list[str], list[str]]) -> list[str]:
    """Three validation lines, the second of two sentences."""
    return [val_pairs[0][0], f"{val_pairs[0][1]} {val_pairs[0][2]}", val_pairs[0][3]]


@pytest.mark.parametrize("extra", [[], ["--split-sentences"]], ids=["plain", "split"])
def test_translate_answers_each_line_of_a_pipe_before_the_next_comes(
    cli: Invoke, model_dir: Path, lines: list[str], tmp_path: Path, extra: list[str]
) -> None:
    args = ["translate", "-m", str(model_dir), "--greedy", "--output-format", "nbest", *extra]
    in_one_go = cli([*args, "-i", str(write_lines(tmp_path / "in.en", lines))])
    assert in_one_go.exit_code == 0, in_one_go.output
    with running(args, stdin=subprocess.PIPE) as process:
        assert process.stdin is not None
        stdin = process.stdin

        def send(data: bytes) -> None:
            stdin.write(data)
            stdin.flush()

        answers = ping_pong(process, send, lines)
        stdin.close()
        assert process.wait(timeout=WAIT_S) == 0
        assert process.stdout is not None and process.stdout.read() == b""
    assert_same_nbest(answers, out_lines(in_one_go.stdout))


def test_translate_answers_each_line_of_a_fifo_before_the_next_comes(
    cli: Invoke, model_dir: Path, lines: list[str], tmp_path: Path
) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    args = ["translate", "-m", str(model_dir), "--greedy", "--output-format", "nbest"]
    in_one_go = cli([*args, "-i", str(write_lines(tmp_path / "in.en", lines))])
    assert in_one_go.exit_code == 0, in_one_go.output
    with running([*args, "-i", str(fifo)], stdin=subprocess.DEVNULL) as process:
        fd = open_fifo_writer(fifo, time.monotonic() + WAIT_S)
        try:
            answers = ping_pong(process, lambda data: _write_all(fd, data), lines)
        finally:
            os.close(fd)
        assert process.wait(timeout=WAIT_S) == 0
    assert_same_nbest(answers, out_lines(in_one_go.stdout))


def assert_same_nbest(answers: list[str], expected: list[str]) -> None:
    """The same n-best lines (id ||| translation ||| score): the ids and translations exactly,
    the scores to 1e-5. One line alone and the same line in a batch of others are not the same
    floating-point sums (the products' blocking depends on the rows), so a score can differ in
    its sixth decimal."""
    assert [a.endswith("\n") for a in answers] == [True] * len(answers)
    got = [a.rstrip("\n").split(" ||| ") for a in answers]
    want = [line.split(" ||| ") for line in expected]
    assert [g[:-1] for g in got] == [w[:-1] for w in want]
    for g, w in zip(got, want, strict=True):
        assert float(g[-1]) == pytest.approx(float(w[-1]), abs=1e-5)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]
