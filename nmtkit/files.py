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

UTF8_BOM = b"\xef\xbb\xbf"  # a byte-order mark some editors put first: never part of the text


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
        encoding = "utf-8-sig" if mode == "r" else "utf-8"
        return io.TextIOWrapper(stream, encoding=encoding, newline="\n", write_through=True)
    path = Path(path)
    try:
        encoding = "utf-8-sig" if mode == "r" else "utf-8"  # reading drops a byte-order mark
        if _is_gzip(path):
            return cast(IO[str], gzip.open(path, mode + "t", encoding=encoding, newline="\n"))
        return open(path, mode, encoding=encoding, newline="\n")
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
                if number == 1:
                    raw = raw.removeprefix(UTF8_BOM)
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
def writing(path: str | Path) -> Iterator[None]:
    """Turn an operating-system error while writing ``path`` (a full disk, a read-only or
    missing folder, a path under a file) into one DataError naming ``path``."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        reason = exc.strerror or str(exc)
        raise DataError(f"cannot write: {reason}", where=str(path)) from exc


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Write to ``path.tmp`` in the same folder and rename it to ``path`` on success.

    A crash or an exception leaves no half-written ``path`` behind. Text modes write UTF-8 with
    '\\n' newlines, gzipped when ``path`` ends in '.gz'.

    Raises:
        DataError: ``path`` cannot be written (naming it and the reason, e.g. a full disk).
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    binary = "b" in mode
    try:
        _check_writable_folder(path)
        if _is_gzip(path):
            stream: IO = cast(
                IO,
                gzip.open(tmp, "wb" if binary else "wt", encoding=None if binary else "utf-8"),  # noqa: SIM115
            )
        elif binary:
            stream = open(tmp, mode)  # noqa: SIM115 (closed below)
        else:
            stream = open(tmp, mode, encoding="utf-8", newline="\n")  # noqa: SIM115
        with writing(path):
            with stream:
                yield stream
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def atomic_path(path: str | Path) -> contextlib.AbstractContextManager[Path]:
    """Yield a temporary path beside ``path`` to be filled by a writer; rename it on success."""
    return _atomic_path(Path(path))


@contextlib.contextmanager
def _atomic_path(path: Path) -> Iterator[Path]:
    tmp = path.with_name(path.name + ".tmp")
    try:
        _check_writable_folder(path)
        with writing(path):
            yield tmp
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _check_writable_folder(path: Path) -> None:
    """Raise DataError unless ``path``'s folder exists and is a folder (checked before any work
    goes into the file, so the message names the real cause)."""
    folder = path.parent
    if not folder.exists():
        raise DataError("cannot write: its folder does not exist", where=str(path))
    if not folder.is_dir():
        raise DataError("cannot write: its folder is a file", where=str(path))
    if path.is_dir():
        raise DataError("cannot write: it is a folder", where=str(path))


def check_writable(path: str | Path) -> None:
    """Check, before heavy work, that ``path`` ('-' is stdout) can be created or replaced:
    its folder exists and takes a new file. Nothing is left behind.

    Raises:
        DataError: naming ``path`` and the reason.
    """
    if str(path) == "-":
        return
    path = Path(path)
    _check_writable_folder(path)
    probe = path.with_name(f".{path.name}.probe-{os.getpid()}")
    with writing(path):
        probe.touch()
        probe.unlink()


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
