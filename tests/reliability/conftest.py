"""Reliability fixtures: one tiny reverse-task data dir and model per worker, tmpfs mounts.

Everything here is generated (tests/toy_corpora.py), so the suite needs no shared data.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runs import invoke
from tests.reliability.checks import Mounts
from tests.toy_corpora import preprocess_toy, reverse_pairs

NUM_TRAIN = 300  # reverse-task training pairs: a few batches of the tiny preset
NUM_VALID = 20
NUM_UPDATES = 10  # updates of the shared model, validated once at the end


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A preprocessed reverse-the-sequence corpus (300 train, 20 valid pairs); its raw
    ``train.{src,tgt}`` and ``valid.{src,tgt}`` lie beside it."""
    folder = tmp_path_factory.mktemp("toy")
    return preprocess_toy(
        folder, reverse_pairs(NUM_TRAIN, seed=1), reverse_pairs(NUM_VALID, seed=2)
    )


def train_toy(data: Path, model_dir: Path, *extra: str) -> Path:
    result = invoke(
        [
            *("train", str(data), "-o", str(model_dir), "--preset", "tiny"),
            *("--max-updates", str(NUM_UPDATES), "--threads", "1", "-q"),
            *("--set", f"train.validate_every={NUM_UPDATES}", *extra),
        ]
    )
    assert result.exit_code == 0, result.output
    return model_dir


@pytest.fixture(scope="session")
def toy_model(toy_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny RNNsearch trained 10 updates on :func:`toy_data`: tests may read, never write it."""
    return train_toy(toy_data, tmp_path_factory.mktemp("model") / "model")


@pytest.fixture(scope="session")
def toy_model_without_attention(toy_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RNNencdec (no attention, so no alignment), trained 10 updates."""
    return train_toy(
        toy_data,
        tmp_path_factory.mktemp("encdec") / "model",
        *("--set", "model.encoder.name=rnn", "--set", "model.attention.name=none"),
    )


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Mounts]:
    """``mounts.tmpfs(name, size=..., read_only=...)`` mounts a tmpfs in ``tmp_path`` (skipping
    the test where that is not allowed); the finalizer unmounts it."""
    made = Mounts(tmp_path)
    yield made
    made.unmount_all()
