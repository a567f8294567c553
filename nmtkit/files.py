"""Text files as nmtkit reads and writes them: UTF-8, plain or gzip, '-' for stdio, atomic."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from nmtkit.errors import DataError


def _is_gzip(path: Path) -> bool:
    return path.suffix == ".gz"


def open_text(path: str | Path, mode: str = "r") -> IO[str]:
    """Open a UTF-8 text file for reading ('r') or writing ('w'); '.gz' by suffix, '-' is stdio.

    Lines are split on '\\n' only, so a stray '\\r' never shifts one side of a parallel corpus.

    Raises:
        DataError: the file does not exist or cannot be opened.
    """
    if str(path) == "-":
        stream = sys.stdin.buffer if mode == "r" else sys.stdout.buffer
        return io.TextIOWrapper(stream, encoding="utf-8", newline="\n", write_through=True)
    path = Path(path)
    try:
        if _is_gzip(path):
            return cast(IO[str], gzip.open(path, mode + "t", encoding="utf-8", newline="\n"))
        return open(path, mode, encoding="utf-8", newline="\n")
    except FileNotFoundError:
        raise DataError("no such file", where=str(path)) from None
    except OSError as exc:
        raise DataError(f"cannot open: {exc.strerror}", where=str(path)) from None


def resolve_corpus(path: str | Path) -> Path:
    """Return ``path`` or ``path.gz``, whichever exists.

    Raises:
        DataError: neither exists.
    """
    path = Path(path)
    for candidate in (path, Path(f"{path}.gz")):
        if candidate.is_file():
            return candidate
    raise DataError("no such file (nor a .gz beside it)", where=str(path))


def _open_binary(path: Path) -> IO[bytes]:
    try:
        if _is_gzip(path):
            return cast(IO[bytes], gzip.open(path, "rb"))
        return open(path, "rb")
    except FileNotFoundError:
        raise DataError("no such file", where=str(path)) from None
    except OSError as exc:
        raise DataError(f"cannot open: {exc.strerror}", where=str(path)) from None


def read_lines(
    path: str | Path, *, skip_invalid: bool = False, invalid_hint: str | None = None
) -> Iterator[str | None]:
    """Yield the lines of a UTF-8 file without their newline.

    Args:
        skip_invalid: yield None for a line that is not valid UTF-8 instead of raising.
        invalid_hint: what to do about a line that is not valid UTF-8, added to the error.

    Raises:
        DataError: a line is not valid UTF-8 (naming file and line), or the file is unreadable.
    """
    if str(path) == "-":
        stream: IO[bytes] = sys.stdin.buffer
        name = "<stdin>"
    else:
        stream = _open_binary(Path(path))
        name = str(path)
    with contextlib.ExitStack() as stack:
        if stream is not sys.stdin.buffer:
            stack.enter_context(stream)
        try:
            for number, raw in enumerate(stream, start=1):
                try:
                    yield raw.rstrip(b"\n").decode("utf-8")
                except UnicodeDecodeError:
                    if not skip_invalid:
                        raise DataError(
                            "invalid UTF-8",
                            where=f"{name}:{number}",
                            hint=invalid_hint,
                        ) from None
                    yield None
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise DataError(f"cannot read: {exc}", where=name) from None


def count_lines(path: str | Path) -> int:
    """Count the lines of a (possibly gzipped) file, a last line without '\\n' included."""
    count = 0
    last = b"\n"
    with _open_binary(Path(path)) as stream:
        while chunk := stream.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Write to ``path.tmp`` in the same folder and rename it to ``path`` on success.

    A crash or an exception leaves no half-written ``path`` behind. Text modes write UTF-8 with
    '\\n' newlines, gzipped when ``path`` ends in '.gz'.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    binary = "b" in mode
    try:
        if _is_gzip(path):
            stream: IO = cast(
                IO,
                gzip.open(tmp, "wb" if binary else "wt", encoding=None if binary else "utf-8"),  # noqa: SIM115
            )
        elif binary:
            stream = open(tmp, mode)  # noqa: SIM115 (closed below)
        else:
            stream = open(tmp, mode, encoding="utf-8", newline="\n")  # noqa: SIM115
        with stream:
            yield stream
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_path(path: str | Path) -> contextlib.AbstractContextManager[Path]:
    """Yield a temporary path beside ``path`` to be filled by a writer; rename it on success."""
    return _atomic_path(Path(path))


@contextlib.contextmanager
def _atomic_path(path: Path) -> Iterator[Path]:
    tmp = path.with_name(path.name + ".tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def save_figure(fig: Any, path: Path, fmt: str) -> None:
    """Write a matplotlib figure to ``path`` atomically, in ``fmt`` (png, svg, pdf).

    The temporary name keeps the real suffix, so that savefig and any reader see one format.
    """
    tmp = path.with_name(f"{path.stem}.tmp{path.suffix}")
    try:
        fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
