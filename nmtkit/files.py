"""Text files as nmtkit reads and writes them: UTF-8, plain or gzip, '-' for stdio, atomic."""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import logging
import os
import re
import secrets
import shutil
import socket
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, cast, overload

from nmtkit.errors import DataError

log = logging.getLogger(__name__)

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
        if _is_gzip(path):
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
def atomic_write(
    path: str | Path, mode: str = "w", *, previous: str | Path | None = None
) -> Iterator[IO]:
    """Write to ``path.tmp`` in the same folder and rename it to ``path`` on success.

    A crash or an exception leaves no half-written ``path`` behind. Text modes write UTF-8 with
    '\\n' newlines, gzipped when ``path`` ends in '.gz'.

    Args:
        previous: where the ``path`` being replaced goes, renamed just before the new one takes
            its name; at every moment ``path`` or ``previous`` holds the newest complete version.

    Raises:
        DataError: ``path`` cannot be written (naming it and the reason, e.g. a full disk).
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    binary = "b" in mode
    try:
        _check_writable_folder(path)
        with writing(path):  # opening fails too, e.g. on a read-only mount: name ``path``
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
            if previous is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.replace(path, previous)
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def open_output(path: str | Path) -> Iterator[IO[str]]:
    """Open ``path`` for writing text: stdout for '-' (flushed at the end), else the file,
    written atomically (:func:`atomic_write`).

    Raises:
        DataError: ``path`` cannot be written (naming it and the reason, e.g. a full disk).
    """
    if str(path) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_write(path) as stream:
        yield stream


def remove_stale_temporaries(folder: str | Path, names: Iterable[str]) -> list[Path]:
    """Delete ``name.tmp`` in ``folder`` for each of ``names``: what :func:`atomic_write` leaves
    when its process is killed. Call it only where no live process is writing those names.

    Returns:
        The files removed.
    """
    removed = []
    for name in names:
        tmp = Path(folder) / f"{name}.tmp"
        if tmp.is_file():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
                log.info("removed %s, left behind by a killed run", tmp)
    return removed


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def staging_path(destination: str | Path) -> Path:
    """A fresh name ``destination.tmp-<host>-<pid>-<random>`` beside ``destination``, for a
    folder built in its place; :func:`remove_stale_staging` knows its owner from the name."""
    destination = Path(destination)
    token = f"{_host()}-{os.getpid()}-{secrets.token_hex(4)}"
    return destination.with_name(f"{destination.name}.tmp-{token}")


def _process_alive(pid: int) -> bool:
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, and another user's
        return True
    return True


def remove_stale_staging(destination: str | Path) -> list[Path]:
    """Delete the staging folders of ``destination`` (:func:`staging_path`) whose owning process
    ran on this host and is gone; a live one's, another host's and unparsable names are kept.

    Returns:
        The folders removed.
    """
    destination = Path(destination)
    prefix = f"{destination.name}.tmp-"
    removed = []
    for candidate in destination.parent.glob(glob.escape(prefix) + "*"):
        host, _, rest = candidate.name[len(prefix) :].rpartition("-")[0].rpartition("-")
        if not candidate.is_dir() or host != _host() or not rest.isdigit():
            continue
        if _process_alive(int(rest)):
            continue
        shutil.rmtree(candidate, ignore_errors=True)
        removed.append(candidate)
        log.info("removed %s, left behind by a killed run", candidate)
    return removed


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


def check_writable_dir(path: str | Path) -> None:
    """Check, before heavy work, that folder ``path`` exists or can be made (it is made) and
    takes a new file. Nothing else is left behind.

    Raises:
        DataError: naming ``path`` and the reason (a file in the way, no permission).
    """
    path = Path(path)
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                where = "it is a file" if folder == path else f"{folder} is a file"
                raise DataError(f"cannot make this folder: {where}", where=str(path))
            break
    probe = path / f".probe-{os.getpid()}"
    with writing(path):
        path.mkdir(parents=True, exist_ok=True)
        probe.touch()
        probe.unlink()


def save_figure(fig: Any, path: Path, fmt: str) -> None:
    """Write a matplotlib figure to ``path`` atomically, in ``fmt`` (png, svg, pdf).

    The temporary name keeps the real suffix, so that savefig and any reader see one format.

    Raises:
        DataError: ``path`` cannot be written (naming it and the reason, e.g. a full disk).
    """
    tmp = path.with_name(f"{path.stem}.tmp{path.suffix}")
    try:
        _check_writable_folder(path)
        with writing(path):  # a full disk or a read-only place: one error naming ``path``
            fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight")
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
