"""Shared fixtures. Test data is read from ../shared/data (never copied into the repository).

The suite passes however it is started: the process state it depends on (umask, environment,
signal dispositions of its children, stdin, current folder) it sets itself, here and in
tests/processes.py, rather than inheriting it from the shell that started pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import configuration, settings

from tests import processes

# First, before any test module imports rich's console or typer (both read the environment once).
processes.normalise()

ROOT = Path(__file__).resolve().parents[1]

# One torch thread in every test process: under xdist the workers already use every core between
# them, and alone the tiny models run faster on one thread than on two contending ones.
torch.set_num_threads(1)

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")

# CI (CI=true) runs the derandomized profile so that failures reproduce. Hypothesis keeps its
# example database in the checkout, wherever pytest was started.
configuration.set_hypothesis_home_dir(ROOT / ".hypothesis")
settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev"))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """pytest's own colours still follow the caller's FORCE_COLOR, PY_COLORS or NO_COLOR, which
    :func:`processes.normalise` removed for nmtkit's sake."""
    wish = processes.removed
    if getattr(config.option, "color", None) != "auto":
        return
    if wish.get("PY_COLORS") == "0" or "NO_COLOR" in wish:
        config.option.color = "no"
    elif wish.get("PY_COLORS") == "1" or wish.get("FORCE_COLOR"):
        config.option.color = "yes"


@pytest.fixture(scope="session", autouse=True)
def empty_working_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test runs in an empty folder, not where pytest was started: a test (or an nmtkit
    default) that reads or writes a relative path cannot depend on the caller's folder, nor
    litter the checkout. Tests name their files by absolute paths (tmp_path, ROOT)."""
    folder = tmp_path_factory.mktemp("cwd")
    previous = Path.cwd()
    os.chdir(folder)
    yield folder
    os.chdir(previous)


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
