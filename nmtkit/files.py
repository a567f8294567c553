"""Text files as nmtkit reads them: UTF-8, plain or gzip, '-' for stdin, line-parallel pairs
checked line by line. Writing is :mod:`nmtkit.outputs`."""

from __future__ import annotations

import gzip
import io
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Literal, cast, overload

from nmtkit.errors import DataError

log = logging.getLogger(__name__)

UTF8_BOM = b"\xef\xbb\xbf"  # a byte-order mark some editors put first: never part of the text


def is_gzip(path: Path) -> bool:
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
        if is_gzip(path):
            return cast(IO[str], gzip.open(path, mode + "t", encoding=encoding, newline="\n"))
        return open(path, mode, encoding=encoding, newline="\n")
    except OSError as exc:
        raise _open_error(path, exc) from None


def _open_error(path: str | Path, exc: OSError) -> DataError:
    """The one-line error for a file that cannot be opened: missing, a folder, or else."""
    if isinstance(exc, FileNotFoundError):
        return DataError("no such file", where=str(path))
    if isinstance(exc, IsADirectoryError):
        return DataError("is a folder, not a file", where=str(path))
    return DataError(f"cannot open: {exc.strerror or exc}", where=str(path))


def resolve_corpus(path: str | Path) -> Path:
    """Return ``path`` or ``path.gz``, whichever is a file.

    Raises:
        DataError: neither is a file (saying so when ``path`` is a folder).
    """
    path = Path(path)
    for candidate in (path, Path(f"{path}.gz")):
        if candidate.is_file():
            return candidate
    if path.is_dir():
        raise DataError("is a folder, not a corpus file", where=str(path))
    raise DataError("no such file (nor a .gz beside it)", where=str(path))


def _open_binary(path: Path) -> IO[bytes]:
    try:
        if is_gzip(path):
            return cast(IO[bytes], gzip.open(path, "rb"))
        return open(path, "rb")
    except OSError as exc:
        raise _open_error(path, exc) from None


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
        yield from decode_lines(
            sys.stdin.buffer, "<stdin>", skip_invalid=skip_invalid, invalid_hint=invalid_hint
        )
        return
    with _open_binary(Path(path)) as stream:
        yield from decode_lines(
            stream, str(path), skip_invalid=skip_invalid, invalid_hint=invalid_hint
        )


def decode_lines(
    stream: IO[bytes], name: str, *, skip_invalid: bool = False, invalid_hint: str | None = None
) -> Iterator[str | None]:
    """Yield the lines of an open binary ``stream`` as :func:`read_lines` does, naming it
    ``name`` in errors (e.g. ``<stdin>``); the caller closes it.

    Raises:
        DataError: a line is not valid UTF-8 (naming ``name`` and the line), or a read fails.
    """
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


def display_name(path: str | Path) -> str:
    """``path`` as errors name it: ``<stdin>`` for '-'."""
    return "<stdin>" if str(path) == "-" else str(path)


def check_line_counts(
    first: str | Path,
    num_first: int,
    second: str | Path,
    num_second: int,
    *,
    where: str | None = None,
    hint: str | None = None,
) -> None:
    """Require two line-parallel files (or streams named ``first`` and ``second``) to have as
    many lines.

    Raises:
        DataError: "``first`` has N lines but ``second`` has M", naming both and their counts.
    """
    if num_first != num_second:
        raise DataError(
            f"{display_name(first)} has {num_first} lines but {display_name(second)} has "
            f"{num_second}",
            where=where,
            hint=hint,
        )


@overload
def read_pairs(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    skip_invalid: Literal[False] = False,
    invalid_hint: str | None = None,
) -> Iterator[tuple[str, str]]: ...


@overload
def read_pairs(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    skip_invalid: bool,
    invalid_hint: str | None = None,
) -> Iterator[tuple[str | None, str | None]]: ...


def read_pairs(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    skip_invalid: bool = False,
    invalid_hint: str | None = None,
) -> Iterator[tuple[str | None, str | None]]:
    """Stream the line pairs of two line-parallel files (:func:`read_lines` each, '-' for
    stdin on one side at most).

    Args:
        skip_invalid, invalid_hint: as for :func:`read_lines` (a side that is not UTF-8 is None).

    Raises:
        DataError: a file is missing or unreadable, a line is not UTF-8 (naming file and line),
            or one file ends before the other (naming both files and their line counts, checked
            when the shorter one ends).
    """
    src_lines = read_lines(src_path, skip_invalid=skip_invalid, invalid_hint=invalid_hint)
    tgt_lines = read_lines(tgt_path, skip_invalid=skip_invalid, invalid_hint=invalid_hint)
    end = object()
    num_read = 0
    for src in src_lines:
        tgt = next(tgt_lines, end)
        if tgt is end:
            num_src = _total_lines(src_path, num_read + 1, src_lines)
            check_line_counts(src_path, num_src, tgt_path, num_read, hint=_PARALLEL_HINT)
        num_read += 1
        yield src, cast("str | None", tgt)
    if next(tgt_lines, end) is not end:
        num_tgt = _total_lines(tgt_path, num_read + 1, tgt_lines)
        check_line_counts(src_path, num_read, tgt_path, num_tgt, hint=_PARALLEL_HINT)


_PARALLEL_HINT = "line-parallel files hold one sentence a line, line N of each the same pair"


def _total_lines(path: str | Path, num_read: int, rest: Iterator[str | None]) -> int:
    """All the lines of ``path``, of which ``num_read`` were read and ``rest`` yields the
    others: counted in bytes for a file, read through for stdin (which cannot be read again)."""
    if str(path) == "-":
        return num_read + sum(1 for _ in rest)
    return count_lines(path)


def count_lines(path: str | Path) -> int:
    """Count the lines of a (possibly gzipped) file, a last line without '\\n' included."""
    count = 0
    last = b"\n"
    with _open_binary(Path(path)) as stream:
        while chunk := stream.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")
