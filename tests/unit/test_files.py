"""What killed runs leave behind is cleaned up, and an unwritable output folder is named first;
line-parallel files are read as pairs, with one error naming both files and their line counts;
output goes to stdout or, atomically, to a file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from nmtkit.data.datadir import staged_dir
from nmtkit.errors import DataError
from nmtkit.files import check_line_counts, read_pairs
from nmtkit.outputs import (
    _host,
    atomic_write,
    check_writable_dir,
    open_output,
    remove_stale_staging,
    remove_stale_temporaries,
    staging_path,
)
from tests.processes import run


def dead_pid() -> int:
    """The PID of a process that has exited (and been reaped)."""
    process = run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(process.stdout)


def test_stale_temporaries_of_the_named_files_are_removed_and_others_kept(
    tmp_path: Path,
) -> None:
    for name in ("best.pt.tmp", "config.yaml.tmp", "notes.tmp", "best.pt"):
        (tmp_path / name).write_text("x")
    removed = remove_stale_temporaries(tmp_path, ["best.pt", "last.pt", "config.yaml"])
    assert sorted(p.name for p in removed) == ["best.pt.tmp", "config.yaml.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "notes.tmp"]


def test_atomic_write_keeps_the_replaced_file_as_previous(tmp_path: Path) -> None:
    path, previous = tmp_path / "state.pt", tmp_path / "state.prev.pt"
    for content in (b"one", b"two", b"three"):
        with atomic_write(path, "wb", previous=previous) as stream:
            stream.write(content)
    assert (path.read_bytes(), previous.read_bytes()) == (b"three", b"two")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.prev.pt", "state.pt"]


def test_staging_folders_of_dead_processes_on_this_host_are_removed(tmp_path: Path) -> None:
    destination = tmp_path / "data"
    mine = staging_path(destination)
    assert mine.name.startswith(f"data.tmp-{_host()}-{os.getpid()}-")
    dead = destination.with_name(f"data.tmp-{_host()}-{dead_pid()}-0a1b2c3d")
    elsewhere = destination.with_name(f"data.tmp-otherhost-{dead_pid()}-0a1b2c3d")
    old_style = destination.with_name("data.tmp-0a1b2c3d")
    other_data = destination.with_name(f"other.tmp-{_host()}-{dead_pid()}-0a1b2c3d")
    for folder in (mine, dead, elsewhere, old_style, other_data):
        folder.mkdir()
        (folder / "train.src.bin").write_bytes(b"x")
    assert remove_stale_staging(destination) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (mine, elsewhere, old_style, other_data)
    )


def test_staged_dir_removes_the_staging_folder_a_killed_preprocess_left(tmp_path: Path) -> None:
    destination = tmp_path / "data"
    stale = destination.with_name(f"data.tmp-{_host()}-{dead_pid()}-0a1b2c3d")
    stale.mkdir()
    (stale / "train.src.bin").write_bytes(b"half")
    with staged_dir(destination) as tmp:
        assert tmp.name.startswith(f"data.tmp-{_host()}-{os.getpid()}-")
        assert not stale.exists()
        (tmp / "manifest.json").write_text("{}")
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


def test_check_writable_dir_makes_the_folder_and_leaves_nothing_else(tmp_path: Path) -> None:
    check_writable_dir(tmp_path / "a" / "model")
    assert (tmp_path / "a" / "model").is_dir()
    assert list((tmp_path / "a" / "model").iterdir()) == []


def test_check_writable_dir_names_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(DataError) as caught:
        check_writable_dir(tmp_path / "file" / "model")
    assert str(caught.value) == (
        f"{tmp_path}/file/model: cannot make this folder: {tmp_path}/file is a file"
    )
    with pytest.raises(DataError, match="cannot make this folder: it is a file"):
        check_writable_dir(tmp_path / "file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_check_writable_dir_names_a_read_only_folder(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir(mode=0o555)
    try:
        with pytest.raises(DataError, match="ro/model: cannot write: Permission denied"):
            check_writable_dir(tmp_path / "ro" / "model")
    finally:
        (tmp_path / "ro").chmod(0o755)


def test_check_line_counts_names_both_files_and_their_counts() -> None:
    check_line_counts("a.en", 3, "b.de", 3)
    with pytest.raises(DataError) as caught:
        check_line_counts("-", 3, "b.de", 2, hint="one line a pair")
    assert str(caught.value) == "<stdin> has 3 lines but b.de has 2 (one line a pair)"


@pytest.mark.parametrize(("num_src", "num_tgt"), [(3, 3), (3, 1), (1, 3), (0, 2), (2, 0)])
def test_read_pairs_yields_the_pairs_or_names_both_counts(
    tmp_path: Path, num_src: int, num_tgt: int
) -> None:
    src, tgt = tmp_path / "src.en", tmp_path / "tgt.de"
    src.write_text("".join(f"s{i}\n" for i in range(num_src)), "utf-8")
    tgt.write_text("".join(f"t{i}\n" for i in range(num_tgt)), "utf-8")
    pairs = read_pairs(src, tgt)
    if num_src == num_tgt:
        assert list(pairs) == [(f"s{i}", f"t{i}") for i in range(num_src)]
        return
    with pytest.raises(DataError) as caught:
        list(pairs)
    assert str(caught.value).startswith(f"{src} has {num_src} lines but {tgt} has {num_tgt} (")


def test_read_pairs_gives_none_for_a_side_that_is_not_utf8_when_asked(tmp_path: Path) -> None:
    src, tgt = tmp_path / "src.en", tmp_path / "tgt.de"
    src.write_bytes(b"a\n\xff\n")
    tgt.write_text("x\ny\n", "utf-8")
    assert list(read_pairs(src, tgt, skip_invalid=True)) == [("a", "x"), (None, "y")]
    with pytest.raises(DataError, match=r"src\.en:2: invalid UTF-8"):
        list(read_pairs(src, tgt))


def test_open_output_writes_a_file_whole_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old\n", "utf-8")
    with pytest.raises(RuntimeError), open_output(str(path)) as stream:
        stream.write("half\n")
        raise RuntimeError("killed")
    assert path.read_text("utf-8") == "old\n"
    with open_output(str(path)) as stream:
        stream.write("new\n")
    assert path.read_text("utf-8") == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_open_output_dash_is_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    with open_output("-") as stream:
        stream.write("to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"
