"""``nmtkit train --tensorboard DIR``: the records of metrics.jsonl, read back with TensorBoard's
own reader, as scalars at their update; a resumed run continues the same log (what a killed run
logged after its save hidden); rank 0 alone writes; a missing extra is one line before training."""

from __future__ import annotations

import json
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import (
    SCALARS,
    EventAccumulator,
)
from typer.testing import Result

from nmtkit.config import load_config
from nmtkit.errors import ConfigError, Interrupted
from nmtkit.training.distributed import Distributed
from nmtkit.training.reporting import RunLog
from nmtkit.training.tensorboard import TensorBoardLog, scalars
from nmtkit.training.trainer import train as train_api
from nmtkit.training.update import Updater
from tests.cli.runs import invoke
from tests.toy_corpora import preprocess_toy, reverse_pairs

Series = dict[str, list[tuple[int, float]]]


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small preprocessed reverse corpus: 300 training and 20 validation pairs."""
    folder = tmp_path_factory.mktemp("toy")
    return preprocess_toy(folder, reverse_pairs(300, seed=1), reverse_pairs(20, seed=2))


def train(data: Path, model_dir: Path, *extra: str) -> Result:
    args = ["train", str(data), "-o", str(model_dir), "--preset", "tiny", "--threads", "1", "-q"]
    return invoke([*args, "--set", "train.log_every=1", "--set", "train.validate_every=3", *extra])


def board(log_dir: Path) -> Series:
    """Every scalar TensorBoard shows for ``log_dir``: tag -> [(step, value)], in step order."""
    events = EventAccumulator(str(log_dir), size_guidance={SCALARS: 0})  # 0: keep them all
    events.Reload()
    return {
        tag: [(event.step, event.value) for event in events.Scalars(tag)]
        for tag in events.Tags()["scalars"]
    }


def expected(model_dir: Path) -> Series:
    """metrics.jsonl's numbers, tag -> [(step, value)]: for each kind and step, the record last
    written (a killed run's records after its save are written again by the resumed run)."""
    last: dict[tuple[str, int], dict[str, Any]] = {}
    for line in (model_dir / "metrics.jsonl").read_text("utf-8").splitlines():
        record = json.loads(line)
        last[record["kind"], record["step"]] = record
    series: Series = {}
    for (kind, step), record in sorted(last.items(), key=lambda item: item[0][1]):
        for key, value in record.items():
            numbers = value.items() if isinstance(value, dict) else [(None, value)]
            for sub, number in numbers:
                if key in ("kind", "step") or isinstance(number, bool | str | type(None)):
                    continue
                tag = f"{kind}/{key.removeprefix('val_')}" + (f"/{sub}" if sub else "")
                series.setdefault(tag, []).append((step, number))
    return series


def assert_same(shown: Series, written: Series) -> None:
    assert sorted(shown) == sorted(written)
    for tag, points in written.items():
        assert [step for step, _ in shown[tag]] == [step for step, _ in points], tag
        # TensorBoard keeps float32
        values = torch.tensor([value for _, value in points], dtype=torch.float32).tolist()
        assert [value for _, value in shown[tag]] == values, tag


def test_the_scalars_are_the_records_of_metrics_jsonl(toy_data: Path, tmp_path: Path) -> None:
    model_dir, log_dir = tmp_path / "model", tmp_path / "runs" / "tiny"
    result = train(toy_data, model_dir, "--max-updates", "7", "--tensorboard", str(log_dir))
    assert result.exit_code == 0, result.output
    shown = board(log_dir)
    for tag in ("train/loss", "train/nll", "train/ppl", "train/lr", "train/tok_s", "train/epoch"):
        assert [step for step, _ in shown[tag]] == list(range(1, 8)), tag
    for tag in ("valid/loss", "valid/ppl", "valid/bleu", "valid/best"):
        assert [step for step, _ in shown[tag]] == [3, 6, 7], tag  # and once at the end
    assert "valid/signature" not in shown  # a string: metrics.jsonl alone
    assert_same(shown, expected(model_dir))
    assert "tensorboard: " in (model_dir / "config.yaml").read_text()


def test_a_resumed_run_continues_the_same_log(toy_data: Path, tmp_path: Path) -> None:
    """Train 4 updates, resume to 6, then (as if killed after the save at 4 having logged 5
    and 6) resume again from the state of update 4 to 9: TensorBoard shows each update once,
    the last run's, as metrics.jsonl's last records say."""
    model_dir, log_dir = tmp_path / "model", tmp_path / "tb"
    board_flag = ("--tensorboard", str(log_dir))
    first = train(toy_data, model_dir, "--max-updates", "4", *board_flag)
    assert first.exit_code == 0, first.output
    saved_at_4 = tmp_path / "train_state.pt"
    shutil.copy(model_dir / "train_state.pt", saved_at_4)
    second = train(toy_data, model_dir, "--max-updates", "6", "--resume", *board_flag)
    assert second.exit_code == 0, second.output
    assert [step for step, _ in board(log_dir)["train/loss"]] == list(range(1, 7))
    assert_same(board(log_dir), expected(model_dir))

    shutil.copy(saved_at_4, model_dir / "train_state.pt")  # the run killed after update 6
    third = train(toy_data, model_dir, "--max-updates", "9", "--resume", *board_flag)
    assert third.exit_code == 0, third.output
    steps = [json.loads(line)["step"] for line in (model_dir / "metrics.jsonl").open()]
    assert steps.count(5) > 1, "metrics.jsonl keeps the killed run's records of update 5"
    shown = board(log_dir)
    assert [step for step, _ in shown["train/loss"]] == list(range(1, 10))
    assert [step for step, _ in shown["valid/bleu"]] == [3, 4, 6, 9]  # 4 ended the first run
    assert_same(shown, expected(model_dir))


def test_the_python_api_writes_it_too_and_overwrite_starts_it_over(
    toy_data: Path, tmp_path: Path
) -> None:
    model_dir, log_dir = tmp_path / "model", tmp_path / "tb"
    overrides = ["train.max_updates=5", "train.log_every=2", f"train.tensorboard={log_dir}"]
    train_api(toy_data, model_dir, load_config(preset="tiny", overrides=overrides))
    assert [step for step, _ in board(log_dir)["train/loss"]] == [2, 4]
    overrides[0] = "train.max_updates=3"  # a shorter run replacing it
    train_api(toy_data, model_dir, load_config(preset="tiny", overrides=overrides), overwrite=True)
    shown = board(log_dir)
    assert [step for step, _ in shown["train/loss"]] == [2]  # the replaced run's 4 is hidden
    assert_same(shown, expected(model_dir))


def test_an_interrupted_run_closes_the_log_with_every_record_in_it(
    toy_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during the third update: the run saves, closes TensorBoard's log and raises."""
    closed: list[Path] = []
    close, update = TensorBoardLog.close, Updater.update

    def closing(self: TensorBoardLog) -> None:
        closed.append(self.log_dir)
        close(self)

    def interrupting(self: Updater, *args: Any, **kwargs: Any) -> Any:
        if kwargs["done"] == 2:
            signal.raise_signal(signal.SIGINT)  # the run's own handler: stop after this update
        return update(self, *args, **kwargs)

    monkeypatch.setattr(TensorBoardLog, "close", closing)
    monkeypatch.setattr(Updater, "update", interrupting)
    model_dir, log_dir = tmp_path / "model", tmp_path / "tb"
    overrides = ["train.log_every=1", f"train.tensorboard={log_dir}"]
    with pytest.raises(Interrupted):
        train_api(toy_data, model_dir, load_config(preset="tiny", overrides=overrides))
    assert closed == [log_dir]
    shown = board(log_dir)
    assert [step for step, _ in shown["train/loss"]] == [1, 2, 3]
    assert_same(shown, expected(model_dir))


def test_without_the_extra_training_stops_before_it_starts_with_one_line(
    toy_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard fails
    model_dir, log_dir = tmp_path / "model", tmp_path / "tb"
    result = train(toy_data, model_dir, "--max-updates", "2", "--tensorboard", str(log_dir))
    assert result.exit_code == 2
    assert result.stderr == (
        "nmtkit: error: tensorboard is needed for train.tensorboard (--tensorboard) "
        "(pip install 'nmtkit[tensorboard]')\n"
    )
    assert not model_dir.exists() and not log_dir.exists()
    config = load_config(preset="tiny", overrides=[f"train.tensorboard={log_dir}"])
    with pytest.raises(ConfigError, match=r"nmtkit\[tensorboard\]"):
        train_api(toy_data, model_dir, config)
    assert not model_dir.exists()
    assert result.stdout == ""


def test_only_rank_0_opens_the_log(tmp_path: Path) -> None:
    cpu = torch.device("cpu")
    other = RunLog(tmp_path, Distributed(device=cpu, rank=1, world_size=2))
    with other.tensorboard(tmp_path / "tb", after=0):
        other.write({"kind": "train", "step": 1, "loss": 1.0})
    assert not (tmp_path / "tb").exists() and not (tmp_path / "metrics.jsonl").exists()


def test_each_number_of_a_record_is_a_scalar() -> None:
    record = {
        "kind": "search",
        "step": 30,
        "length_penalty": 1.4,
        "val_bleu": 12.5,
        "tried": {"1.0": 11.0, "1.4": 12.5},
        "best": 1.4,
        "p_value": None,
        "signature": "nrefs:1",
        "flag": True,
    }
    assert list(scalars(record)) == [
        ("search/length_penalty", 1.4),
        ("search/bleu", 12.5),
        ("search/tried/1.0", 11.0),
        ("search/tried/1.4", 12.5),
        ("search/best", 1.4),
    ]
