"""What the reliability tests share: the one-line error check, file snapshots, tmpfs mounts."""

from __future__ import annotations

import errno
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch

from tests.processes import run

NMTKIT = [sys.executable, "-m", "nmtkit"]
ERROR = "nmtkit: error:"

Snapshot = dict[Path, tuple[bytes, int]]


def assert_one_error_line(
    exit_code: int, stdout: str, stderr: str, expected: int, *fragments: str
) -> str:
    """A failed command: exit ``expected``, no traceback, and one ``nmtkit: error:`` line on
    stderr holding ``fragments`` (returned), or for exit 2 Click's own usage error (a usage line,
    a hint and a boxed message) holding them."""
    assert "Traceback" not in stdout + stderr, stderr
    assert exit_code == expected, stderr
    assert ERROR not in stdout
    if expected == 2 and stderr.startswith("Usage:"):
        for fragment in fragments:
            assert fragment in stderr, (fragment, stderr)
        return stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(ERROR), stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def snapshot(*roots: Path) -> Snapshot:
    """Every file under ``roots`` with its bytes and modification time."""
    return {
        path: (path.read_bytes(), path.stat().st_mtime_ns)
        for root in roots
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def leftovers(*roots: Path) -> list[Path]:
    """Temporary files, staging folders and probes a command left under (or beside) ``roots``."""
    marks = (".tmp", ".probe", ".old-")
    found = []
    for root in roots:
        for path in [*root.rglob("*"), *root.parent.glob(f"{root.name}.*")]:
            if any(mark in path.name for mark in marks):
                found.append(path)
    return sorted(found)


def assert_unchanged(before: Snapshot, *roots: Path) -> None:
    """No file under ``roots`` was added, removed, rewritten or touched, and nothing temporary
    was left behind."""
    after = snapshot(*roots)
    assert sorted(after) == sorted(before), "files added or removed"
    changed = [path for path in before if after[path] != before[path]]
    assert changed == [], f"files rewritten: {changed}"
    assert leftovers(*roots) == []


def flip_bytes(path: Path) -> None:
    """Damage ``path`` in its middle, as a bad disk or a torn copy would."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(middle, middle + 64):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def model_weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    return torch.load(checkpoint, map_location="cpu", weights_only=True)["model"]


def assert_same_weights(a: Path, b: Path) -> None:
    """The checkpoints ``a`` and ``b`` hold equal parameters, bit for bit."""
    wa, wb = model_weights(a), model_weights(b)
    assert sorted(wa) == sorted(wb)
    different = [name for name in wa if not torch.equal(wa[name], wb[name])]
    assert different == [], f"{a} and {b} differ in {different}"


class Mounts:
    """tmpfs mounts made by a test, unmounted by its finalizer (skips where mounting fails)."""

    def __init__(self, base: Path):
        self.base = base
        self.mounted: list[Path] = []

    def tmpfs(self, name: str, *, size: str = "1m", read_only: bool = False) -> Path:
        if not sys.platform.startswith("linux") or os.geteuid() != 0 or not shutil.which("mount"):
            pytest.skip("mounting a tmpfs needs Linux, root and the mount command")
        folder = self.base / name
        folder.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        done = run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
        self.mounted.append(folder)
        return folder

    def unmount_all(self) -> None:
        for folder in reversed(self.mounted):
            if run(["umount", str(folder)], capture_output=True).returncode != 0:
                run(["umount", "-l", str(folder)], capture_output=True)
        self.mounted.clear()


def fill(folder: Path, *, leave: int = 0) -> None:
    """Fill the file system of ``folder`` but ``leave`` bytes (0: to the last byte)."""
    stats = os.statvfs(folder)
    size = max(stats.f_bavail * stats.f_frsize - leave, 0)
    with open(folder / "filler", "wb", buffering=0) as stream:
        stream.write(b"\0" * size)
        if leave:
            return
        try:
            while True:
                stream.write(b"\0")
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
