"""A full disk: one error line naming the file and "No space left on device", exit 1, no
half-written output, and what was there before kept.

Each test mounts a small tmpfs (skipped where mounting is not allowed), puts an earlier output in
it, fills it, and runs the command with its output there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli.runs import invoke
from tests.reliability.checks import (
    Mounts,
    assert_one_error_line,
    assert_unchanged,
    fill,
    leftovers,
    snapshot,
)

NO_SPACE = "No space left on device"


def assert_full_disk_error(
    args: list[str], named: str, disk: Path, *, input: str | None = None
) -> None:
    """Run ``args`` on the full ``disk``: one line naming ``named`` and the full disk, exit 1."""
    before = snapshot(disk)
    result = invoke(args, input=input)
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, 1, named, NO_SPACE)
    assert_unchanged(before, disk)


def source_lines(folder: Path, num: int = 200) -> tuple[Path, Path]:
    src, tgt = folder / "src.txt", folder / "tgt.txt"
    src.write_text("a b c d e f\n" * num, "utf-8")
    tgt.write_text("f e d c b a\n" * num, "utf-8")
    return src, tgt


def test_preprocess_on_a_full_disk_keeps_the_earlier_data_dir(
    toy_data: Path, mounts: Mounts
) -> None:
    disk = mounts.tmpfs("disk", size="1m")
    shutil.copytree(toy_data, disk / "data")
    fill(disk)
    args = ["preprocess", "-s", "src", "-t", "tgt", "--vocab-size", "40", "-q"]
    prefix = str(toy_data.parent / "train")
    assert_full_disk_error(
        [*args, "--trainpref", prefix, "--destdir", str(disk / "data")], "disk", disk
    )


def test_train_on_a_full_disk_keeps_the_saved_run(
    toy_data: Path, toy_model: Path, mounts: Mounts
) -> None:
    """The disk fills between two checkpoints: the run stops, its last save intact."""
    from nmtkit.checkpoint import load_model

    disk = mounts.tmpfs("disk", size="4m")
    model_dir = Path(shutil.copytree(toy_model, disk / "model"))
    fill(disk, leave=64 * 1024)  # room for the logs and metrics, not for a checkpoint
    saved = {
        name: snapshot(disk)[model_dir / name] for name in ("best.pt", "last.pt", "train_state.pt")
    }
    result = invoke(
        [
            *("train", str(toy_data), "-o", str(model_dir), "--preset", "tiny", "--resume"),
            *("--max-updates", "12", "--set", "train.validate_every=12", "--threads", "1", "-q"),
        ]
    )
    assert_one_error_line(
        result.exit_code, result.stdout, result.stderr, 1, str(model_dir), NO_SPACE
    )
    after = snapshot(disk)
    assert {name: after[model_dir / name] for name in saved} == saved
    assert leftovers(disk) == []
    load_model(model_dir)


def test_train_on_a_disk_that_fills_while_logging_names_the_log(
    toy_data: Path, toy_model: Path, mounts: Mounts
) -> None:
    """The logs end on a page boundary and one page is free: the first appends take it, and
    the next one to ``train.log`` finds the disk full."""
    disk = mounts.tmpfs("disk", size="4m")
    model_dir = Path(shutil.copytree(toy_model, disk / "model"))
    for name in ("metrics.jsonl", "train.log"):
        with open(model_dir / name, "a", encoding="utf-8") as stream:
            stream.write(" " * (4095 - (model_dir / name).stat().st_size % 4096) + "\n")
    fill(disk, leave=4096)
    saved = {name: snapshot(disk)[model_dir / name] for name in ("best.pt", "train_state.pt")}
    result = invoke(
        [
            *("train", str(toy_data), "-o", str(model_dir), "--preset", "tiny", "--resume"),
            *("--max-updates", "12", "--set", "train.log_every=1", "--threads", "1", "-q"),
        ]
    )
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, 1, "train.log", NO_SPACE)
    after = snapshot(disk)
    assert {name: after[model_dir / name] for name in saved} == saved
    assert leftovers(disk) == []


def test_train_on_a_full_disk_writes_no_half_model(toy_data: Path, mounts: Mounts) -> None:
    disk = mounts.tmpfs("disk", size="64k")
    fill(disk)
    args = ["train", str(toy_data), "-o", str(disk / "model"), "--preset", "tiny", "-q"]
    assert_full_disk_error([*args, "--max-updates", "2", "--threads", "1"], "model", disk)
    assert list(disk.rglob("*.pt")) == []


def test_translate_on_a_full_disk_keeps_the_earlier_output(
    toy_model: Path, tmp_path: Path, mounts: Mounts
) -> None:
    src, _ = source_lines(tmp_path)
    disk = mounts.tmpfs("disk", size="64k")
    (disk / "out.txt").write_text("an earlier translation\n", "utf-8")
    fill(disk)
    args = ["translate", "-m", str(toy_model), "-i", str(src), "--greedy", "-q"]
    assert_full_disk_error([*args, "--output", str(disk / "out.txt")], "out.txt", disk)


def test_align_on_a_full_disk_keeps_the_earlier_output(
    toy_model: Path, tmp_path: Path, mounts: Mounts
) -> None:
    src, tgt = source_lines(tmp_path)
    disk = mounts.tmpfs("disk", size="64k")
    (disk / "out.align").write_text("0-0 1-1\n", "utf-8")
    fill(disk)
    args = ["align", "-m", str(toy_model), "--source", str(src), "--target", str(tgt), "-q"]
    assert_full_disk_error([*args, "--output", str(disk / "out.align")], "out.align", disk)


def test_align_plots_on_a_full_disk_keep_the_earlier_ones(
    toy_model: Path, tmp_path: Path, mounts: Mounts
) -> None:
    src, tgt = source_lines(tmp_path, num=3)
    disk = mounts.tmpfs("disk", size="64k")
    (disk / "plots").mkdir()
    (disk / "plots" / "00001.png").write_bytes(b"an earlier heatmap")
    fill(disk)
    args = ["align", "-m", str(toy_model), "--source", str(src), "--target", str(tgt), "-q"]
    assert_full_disk_error([*args, "--plot", str(disk / "plots")], ".png", disk)


def test_score_plot_on_a_full_disk_keeps_the_earlier_plot(tmp_path: Path, mounts: Mounts) -> None:
    src, tgt = source_lines(tmp_path)
    disk = mounts.tmpfs("disk", size="64k")
    (disk / "bleu.png").write_bytes(b"an earlier plot")
    fill(disk)
    args = ["score", "-r", str(tgt), "-i", str(src), "-q"]
    assert_full_disk_error([*args, "--plot", str(disk / "bleu.png")], "bleu.png", disk)
