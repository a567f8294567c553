"""Output files as nmtkit writes them: atomically (a temporary in the same folder, renamed on
success), '-' for stdout, folders checked writable before any work, and the temporaries of a
killed run cleaned up. Reading is :mod:`nmtkit.files`."""

from __future__ import annotations

import contextlib
import glob
import gzip
import logging
import os
import re
import secrets
import shutil
import socket
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from nmtkit.errors import DataError
from nmtkit.files import is_gzip

log = logging.getLogger(__name__)


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
            if is_gzip(path):
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
