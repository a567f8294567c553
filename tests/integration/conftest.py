"""Integration fixtures: the tiny RNNsearch that learned to reverse sequences, trained once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.learned import LearnedModel, train_reversal_model


@pytest.fixture(scope="session")
def reversal_model(reverse_data: Path, tmp_path_factory: pytest.TempPathFactory) -> LearnedModel:
    """:func:`train_reversal_model` on :func:`reverse_data`. Tests may read the model dir, never
    write it, and are marked ``REVERSAL_GROUP`` so that one worker trains it."""
    return train_reversal_model(reverse_data, tmp_path_factory.mktemp("reversal") / "model")
