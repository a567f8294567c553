"""The tiny RNNsearch that learned to reverse sequences, shared by the integration tests that
need a model which has learned its task (``reversal_model`` in tests/integration/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from nmtkit.config import load_config
from nmtkit.training.trainer import train

# The tests of the learned reversal model share a worker under ``--dist loadgroup``, so that it
# trains once (a session fixture is made once per worker).
REVERSAL_GROUP = pytest.mark.xdist_group("reversal-model")


@dataclass(frozen=True)
class LearnedModel:
    path: Path  # the model dir
    best_bleu: float | None  # its best validation BLEU


def train_reversal_model(data: Path, model_dir: Path) -> LearnedModel:
    """The tiny preset trained 1200 updates on ``data`` (about a minute of CPU), enough to learn
    the reverse task of :func:`tests.toy_corpora.reverse_pairs`."""
    config = load_config(
        preset="tiny",
        overrides=["train.max_updates=1200", "train.validate_every=400", "train.max_tokens=600"],
    )
    return LearnedModel(model_dir, train(data, model_dir, config).best_bleu)
