"""--precision int8 keeps a learned model's translations: int8 decoding of a model that learned
to reverse short sequences gives the fp32 translations (torchao needed; skipped without it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nmtkit.checkpoint import load_model
from nmtkit.config import load_config
from nmtkit.training.trainer import train
from nmtkit.translation.translator import Translator
from tests.toy_corpora import preprocess_toy, reverse_pairs

pytestmark = pytest.mark.slow
pytest.importorskip("torchao")


@pytest.fixture(scope="module")
def reversal_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model trained to reverse short symbol sequences, exactly enough to compare."""
    folder = tmp_path_factory.mktemp("int8-reverse")
    data = preprocess_toy(
        folder, reverse_pairs(2000, seed=1, max_len=6), reverse_pairs(50, seed=2, max_len=6)
    )
    updates = ["train.max_updates=400", "train.validate_every=400", "train.threads=1"]
    train(data, folder / "model", load_config(preset="tiny", overrides=updates))
    return folder / "model"


def same_share(lines: list[str], others: list[str]) -> float:
    return sum(a == b for a, b in zip(lines, others, strict=True)) / len(lines)


def test_int8_translations_match_fp32_on_a_learned_task(reversal_model: Path) -> None:
    pairs = reverse_pairs(200, seed=7, max_len=6)
    sources = [src for src, _ in pairs]
    fp32 = Translator(load_model(reversal_model), precision="fp32")
    expected = [t.text for t in fp32.translate(sources)]
    assert same_share(expected, [ref for _, ref in pairs]) >= 0.9  # fp32 learned the task
    int8 = Translator(load_model(reversal_model), precision="int8")
    assert int8.precision == "int8"
    assert int8.loaded.model.decoder.output.weight.qdata.dtype == torch.int8
    outputs = [t.text for t in int8.translate(sources)]
    assert same_share(outputs, expected) >= 0.9
