"""A training run's dropout follows its length (train.short_run_dropout): metrics.jsonl shows
the value every update trained with, short_run_dropout in a run of 2 epochs, model.dropout in
one of 8, the line's value in one of 5; the model's own config keeps model.dropout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.runs import invoke
from tests.toy_corpora import preprocess_toy, reverse_pairs


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small preprocessed reverse corpus: 120 training and 10 validation pairs."""
    folder = tmp_path_factory.mktemp("toy")
    return preprocess_toy(folder, reverse_pairs(120, seed=1), reverse_pairs(10, seed=2))


def trained_dropouts(data: Path, model_dir: Path, epochs: int) -> list[float]:
    """Train the tiny model with model.dropout 0.3 for ``epochs`` epochs; the dropout of
    each update after the first (the first, before any progress, has short_run_dropout)."""
    result = invoke(
        ["train", str(data), "-o", str(model_dir), "--preset", "tiny", "--threads", "1", "-q"]
        + ["--set", "model.dropout=0.3", "--set", f"train.max_epochs={epochs}"]
        + ["--set", "train.log_every=1", "--set", "train.validate_every=1000"]
    )
    assert result.exit_code == 0, result.stderr
    records = [json.loads(line) for line in (model_dir / "metrics.jsonl").open(encoding="utf-8")]
    train = [r for r in records if r["kind"] == "train"]
    assert train[0]["step"] == 1 and train[0]["dropout"] == pytest.approx(0.2)
    return [r["dropout"] for r in train[1:]]


@pytest.mark.parametrize(("epochs", "expected"), [(2, 0.2), (5, 0.2 + 0.1 * 1.5 / 3.5), (8, 0.3)])
def test_the_dropout_follows_the_runs_length(
    toy_data: Path, tmp_path: Path, epochs: int, expected: float
) -> None:
    seen = trained_dropouts(toy_data, tmp_path / "model", epochs)
    assert seen and all(p == pytest.approx(expected) for p in seen)
    saved = yaml.safe_load((tmp_path / "model" / "config.yaml").read_text("utf-8"))
    assert saved["model"]["dropout"] == 0.3
