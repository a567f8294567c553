"""Shared fixtures. Test data is read from ../shared/data (never copied into the repository)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from hypothesis import settings

# One torch thread in every test process: under xdist the workers already use every core between
# them, and alone the tiny models run faster on one thread than on two contending ones.
torch.set_num_threads(1)

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")

# CI (CI=true) runs the derandomized profile so that failures reproduce.
settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared public data folder: $NMTKIT_SHARED_DATA, else ../shared/data.

    Without it the tests that need it fail in CI (``CI`` set), where a missing folder means a
    broken set-up, and are skipped elsewhere.
    """
    default = Path(__file__).parents[1] / ".." / "shared" / "data"
    path = Path(os.environ.get("NMTKIT_SHARED_DATA", default)).resolve()
    if not path.is_dir():
        reason = f"shared data folder {path} is absent (set NMTKIT_SHARED_DATA)"
        if IN_CI:
            pytest.fail(f"{reason}; CI must provide it", pytrace=False)
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def reverse_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A preprocessed reverse-the-sequence corpus (4000 train, 200 valid pairs)."""
    from tests.toy_corpora import preprocess_toy, reverse_pairs

    folder = tmp_path_factory.mktemp("reverse")
    return preprocess_toy(folder, reverse_pairs(4000, seed=1), reverse_pairs(200, seed=2))
