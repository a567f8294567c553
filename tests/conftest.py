"""Shared fixtures. Test data is read from ../shared/data (never copied into the repository)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs with HYPOTHESIS_PROFILE=ci so that failures reproduce.
settings.register_profile("ci", derandomize=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared public data folder: $NMTKIT_SHARED_DATA, else ../shared/data; skip if absent."""
    default = Path(__file__).parents[1] / ".." / "shared" / "data"
    path = Path(os.environ.get("NMTKIT_SHARED_DATA", default)).resolve()
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is absent")
    return path
