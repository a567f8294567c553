"""The length penalty chosen on the validation set when training ends: recorded in
metrics.jsonl, written into best.pt, last.pt and config.yaml, and translate's default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from nmtkit.checkpoint import load_model
from nmtkit.config import load_config
from nmtkit.training.search_tuning import tunes_search, with_length_penalty
from nmtkit.training.trainer import train
from nmtkit.translation.translator import Translator

pytestmark = pytest.mark.slow

GRID = "train.tune_length_penalties=[0.6, 1.4, 2.0]"


def test_training_ends_by_choosing_the_length_penalty_on_validation(
    reverse_data: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    overrides = ["train.max_updates=300", "train.validate_every=150", GRID]
    train(reverse_data, model_dir, load_config(preset="tiny", overrides=overrides))
    records = [json.loads(line) for line in (model_dir / "metrics.jsonl").open()]
    tuned = [r for r in records if r["kind"] == "search"]
    assert len(tuned) == 1, "one choice, after the last validation"
    assert records[-1]["kind"] == "search"
    tried = {float(alpha): bleu for alpha, bleu in tuned[0]["tried"].items()}
    assert sorted(tried) == [0.6, 1.0, 1.4, 2.0]  # the grid and the configured 1.0
    best, chosen = tuned[0]["best"], tuned[0]["length_penalty"]
    assert tried[best] == max(tried.values())
    # the best replaces the configured 1.0 only where the paired bootstrap finds it better
    p_value = tuned[0]["p_value"]
    assert chosen == (best if p_value is not None and p_value < 0.05 else 1.0)
    for name in ("best.pt", "last.pt"):
        saved = torch.load(model_dir / name, map_location="cpu", weights_only=True)
        assert saved["config"]["search"]["strategy"]["length_penalty"] == chosen
    on_disk = yaml.safe_load((model_dir / "config.yaml").read_text())
    assert on_disk["search"]["strategy"]["length_penalty"] == chosen
    translator = Translator(load_model(model_dir))
    assert translator.strategy.config.length_penalty == chosen  # translate's default


def test_only_a_beam_search_with_a_grid_is_tuned() -> None:
    assert tunes_search(load_config(overrides=[GRID]))
    assert not tunes_search(load_config())  # off by default
    assert not tunes_search(load_config(overrides=[GRID, "search.strategy=greedy"]))
    config = with_length_penalty(load_config(), 1.4)
    assert config.search.strategy.options.length_penalty == 1.4
    assert config.search.strategy.options.beam_size == 5  # the rest is kept
