"""The model directory survives what ends runs: a model is never replaced without --overwrite, an
ended run resumes to "nothing to do", a damaged train state falls back to the one before it, and
what a killed run left behind is cleaned up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import Result

from nmtkit.checkpoint import SHORTLIST
from tests.cli.runs import invoke
from tests.toy_corpora import preprocess_toy, reverse_pairs


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small preprocessed reverse corpus: 300 training and 20 validation pairs."""
    folder = tmp_path_factory.mktemp("toy")
    return preprocess_toy(folder, reverse_pairs(300, seed=1), reverse_pairs(20, seed=2))


def train(data: Path, model_dir: Path, *extra: str) -> Result:
    args = ["train", str(data), "-o", str(model_dir), "--preset", "tiny", "--threads", "1"]
    return invoke([*args, "--set", "train.log_every=1", *extra])


def steps(model_dir: Path) -> list[int]:
    lines = (model_dir / "metrics.jsonl").read_text().splitlines()
    return [r["step"] for r in map(json.loads, lines) if r["kind"] == "train"]


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def squeeze(text: str) -> str:
    """``text`` without whitespace: rich wraps log lines at the console width, paths included."""
    return "".join(text.split())


def flip_a_weight_byte(path: Path) -> None:
    """Damage one byte inside the first weight matrix's data, as a failing disk would."""
    weight = torch.load(path, weights_only=True)["model"]["src_embed.weight"]
    data = bytearray(path.read_bytes())
    offset = bytes(data).find(weight.numpy().tobytes()[:64])
    assert offset > 0
    data[offset + 40] ^= 0x40
    path.write_bytes(bytes(data))


def test_resuming_a_run_that_stopped_early_has_nothing_to_do(
    toy_data: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    early = ("--set", "train.validate_every=2", "--set", "train.patience=1")
    first = train(toy_data, model_dir, *early, "--max-updates", "50")
    assert first.exit_code == 0, first.output
    assert squeeze("stopped by early_stopping") in squeeze(first.stderr)
    stopped_at = steps(model_dir)[-1]
    assert stopped_at < 50
    assert torch.load(model_dir / "train_state.pt")["run"]["stop_reason"] == "early_stopping"

    before = contents(model_dir)
    again = train(toy_data, model_dir, *early, "--max-updates", "250", "--resume")
    assert again.exit_code == 0, again.output
    assert again.stderr.count("INFO") == 1, again.stderr
    assert squeeze(
        f"INFO nothing to do: the run in {model_dir} ended at step={stopped_at} by early_stopping"
        " (to continue, raise train.patience, or set it to 0)"
    ) in squeeze(again.stderr)
    assert contents(model_dir) == before

    patient = ("--set", "train.validate_every=2", "--set", "train.patience=3")
    limit = str(stopped_at + 2)
    resumed = train(toy_data, model_dir, *patient, "--max-updates", limit, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert steps(model_dir)[-1] == stopped_at + 2


def test_resuming_a_run_that_reached_max_updates_goes_on_only_past_a_raised_limit(
    toy_data: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    assert train(toy_data, model_dir, "--max-updates", "3").exit_code == 0
    before = contents(model_dir)
    again = train(toy_data, model_dir, "--max-updates", "3", "--resume")
    assert again.exit_code == 0, again.output
    assert squeeze("ended at step=3 by max_updates (to continue, raise --max-updates)") in squeeze(
        again.stderr
    )
    assert contents(model_dir) == before
    more = train(toy_data, model_dir, "--max-updates", "5", "--resume")
    assert more.exit_code == 0, more.output
    assert steps(model_dir) == [1, 2, 3, 4, 5]


def test_training_writes_the_shortlist_unless_told_not_to(toy_data: Path, tmp_path: Path) -> None:
    """A finished run leaves shortlist.npz beside its checkpoints (for translate --shortlist);
    train.shortlist=false leaves none."""
    with_it, without = tmp_path / "with", tmp_path / "without"
    assert train(toy_data, with_it, "--max-updates", "2").exit_code == 0
    off = train(toy_data, without, "--max-updates", "2", "--set", "train.shortlist=false")
    assert off.exit_code == 0, off.output
    assert (with_it / SHORTLIST).is_file()
    assert not (without / SHORTLIST).exists()
    assert (without / "best.pt").is_file()


@pytest.mark.parametrize("kept", ["best.pt", "last.pt"])
def test_checkpoints_without_a_train_state_are_never_replaced(
    toy_data: Path, tmp_path: Path, kept: str
) -> None:
    """As after a kill -9 during the first save: checkpoints, but no train_state.pt."""
    model_dir = tmp_path / "model"
    assert train(toy_data, model_dir, "--max-updates", "2").exit_code == 0
    for path in model_dir.glob("*.pt"):
        if path.name != kept:
            path.unlink()
    before = contents(model_dir)

    fresh = train(toy_data, model_dir, "--max-updates", "2")
    assert fresh.exit_code == 1
    assert fresh.stderr.startswith(f"nmtkit: error: {model_dir}: already holds a training run")
    assert f"({kept})" in fresh.stderr and "--overwrite" in fresh.stderr
    resumed = train(toy_data, model_dir, "--max-updates", "2", "--resume")
    assert resumed.exit_code == 1
    assert squeeze(resumed.stderr) == squeeze(
        f"nmtkit: error: {model_dir}: holds {kept} but no train_state.pt, so the run cannot be "
        "resumed (its checkpoints still translate; --overwrite instead trains afresh)"
    )
    assert contents(model_dir) == before

    replaced = train(toy_data, model_dir, "--max-updates", "1", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert steps(model_dir) == [1]


def test_resume_falls_back_to_the_previous_state_when_the_newest_is_damaged(
    toy_data: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    every_2 = ("--set", "train.validate_every=2", "--set", "train.patience=0")
    assert train(toy_data, model_dir, *every_2, "--max-updates", "4").exit_code == 0
    # the validation at step 4 saved a state, and the closing save rotated it to .prev
    assert torch.load(model_dir / "train_state.prev.pt", weights_only=True)["run"]["step"] == 4
    flip_a_weight_byte(model_dir / "train_state.pt")

    resumed = train(toy_data, model_dir, *every_2, "--max-updates", "6", "--resume")
    assert resumed.exit_code == 0, resumed.output
    warning = squeeze(resumed.stderr)
    assert squeeze(f"WARNING {model_dir / 'train_state.pt'}: damaged") in warning
    assert squeeze("resuming from the state saved before it, train_state.prev.pt (step 4)") in (
        warning
    )
    assert steps(model_dir) == [1, 2, 3, 4, 5, 6]
    assert torch.load(model_dir / "train_state.pt", weights_only=True)["run"]["step"] == 6


def test_a_damaged_newest_state_without_a_previous_one_is_one_error_line(
    toy_data: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    assert train(toy_data, model_dir, "--max-updates", "1").exit_code == 0
    (model_dir / "train_state.prev.pt").unlink()
    flip_a_weight_byte(model_dir / "train_state.pt")
    resumed = train(toy_data, model_dir, "--max-updates", "2", "--resume")
    assert resumed.exit_code == 1
    assert squeeze(resumed.stderr) == squeeze(
        f"nmtkit: error: {model_dir / 'train_state.pt'}: damaged: its contents do not match the "
        "checksum written with them"
    )


def test_train_deletes_the_temporary_files_a_killed_run_left(
    toy_data: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    stale = ["best.pt.tmp", "last.pt.tmp", "train_state.pt.tmp", "config.yaml.tmp"]
    for name in [*stale, "notes.tmp"]:
        (model_dir / name).write_bytes(b"half a file")
    result = train(toy_data, model_dir, "--max-updates", "1")
    assert result.exit_code == 0, result.output
    assert [p.name for p in model_dir.glob("*.tmp")] == ["notes.tmp"]  # not ours: kept


def test_a_resumed_state_older_than_best_pt_never_replaces_it_with_a_worse_model(
    toy_data: Path, tmp_path: Path
) -> None:
    """As after a kill between writing best.pt and train_state.pt, or a fallback to .prev."""
    model_dir = tmp_path / "model"
    every_2 = ("--set", "train.validate_every=2", "--set", "train.patience=0")
    assert train(toy_data, model_dir, *every_2, "--max-updates", "2").exit_code == 0
    newer_best = torch.load(model_dir / "best.pt", weights_only=True)
    del newer_best["sha256"]
    newer_best.update(step=3, bleu=99.0)  # a best.pt saved after the train state
    torch.save(newer_best, model_dir / "best.pt")
    before = (model_dir / "best.pt").read_bytes()

    resumed = train(toy_data, model_dir, *every_2, "--max-updates", "6", "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert squeeze(
        "best.pt (step=3, BLEU 99.00) is newer than the saved run (step=2); keeping it as the best"
    ) in squeeze(resumed.stderr)
    assert (model_dir / "best.pt").read_bytes() == before
    assert torch.load(model_dir / "train_state.pt", weights_only=True)["run"]["best_bleu"] == 99.0


def test_a_run_saved_before_newer_model_options_existed_resumes(
    toy_data: Path, tmp_path: Path
) -> None:
    """A train state written before ``model.init`` and ``readout_state`` existed names neither:
    its model is the one their defaults describe, so --resume continues it."""
    model_dir = tmp_path / "model"
    assert train(toy_data, model_dir, "--max-updates", "2").exit_code == 0
    path = model_dir / "train_state.pt"
    state = torch.load(path, weights_only=True)
    state.pop("sha256", None)  # the file is edited by hand here: its checksum no longer holds
    del state["config"]["model"]["init"]
    del state["config"]["model"]["decoder"]["readout_state"]
    torch.save(state, path)
    (model_dir / "train_state.prev.pt").unlink(missing_ok=True)

    resumed = train(toy_data, model_dir, "--max-updates", "4", "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert steps(model_dir)[-1] == 4
