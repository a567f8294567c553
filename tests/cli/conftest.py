"""CLI fixtures: a tiny real Multi30k slice, preprocessed and trained once per session."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.cli.runs import NUM_TRAIN, NUM_UPDATES, NUM_VALID, Invoke, Run, invoke


@pytest.fixture(scope="session")
def cli() -> Invoke:
    """``cli(["translate", ...], input=...)`` runs nmtkit in-process (see :func:`invoke`)."""
    return invoke


def write_slice(src: Path, dest: Path, num_lines: int) -> None:
    with gzip.open(src, "rt", encoding="utf-8", newline="\n") as stream:
        lines = [next(stream) for _ in range(num_lines)]
    dest.write_text("".join(lines), encoding="utf-8", newline="\n")


@pytest.fixture(scope="session")
def corpus_dir(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """train.{en,de} (300 lines) and valid.{en,de} (50 lines) cut from Multi30k."""
    folder = tmp_path_factory.mktemp("corpus")
    for split, name, num_lines in (("train", "train", NUM_TRAIN), ("valid", "val", NUM_VALID)):
        for lang in ("en", "de"):
            source = shared_data / "multi30k" / f"{name}.{lang}.gz"
            write_slice(source, folder / f"{split}.{lang}", num_lines)
    return folder


@pytest.fixture(scope="session")
def preprocessed(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """``nmtkit preprocess`` run once on the slice."""
    destdir = tmp_path_factory.mktemp("prep") / "data"
    result = invoke(
        [
            "preprocess",
            *("-s", "en", "-t", "de"),
            *("--trainpref", str(corpus_dir / "train")),
            *("--validpref", str(corpus_dir / "valid")),
            *("--destdir", str(destdir)),
            *("--vocab-size", "300"),
        ]
    )
    assert result.exit_code == 0, result.output
    return Run(destdir, result)


@pytest.fixture(scope="session")
def trained(preprocessed: Run, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """``nmtkit train`` run once: the tiny preset, 20 updates, one validation."""
    model_dir = tmp_path_factory.mktemp("train") / "model"
    result = invoke(
        [
            "train",
            str(preprocessed.path),
            *("-o", str(model_dir)),
            *("--preset", "tiny"),
            *("--max-updates", str(NUM_UPDATES)),
            *("--set", f"train.validate_every={NUM_UPDATES}"),
            *("--set", "train.log_every=10"),
            *("--threads", "1"),
        ]
    )
    assert result.exit_code == 0, result.output
    return Run(model_dir, result)


@pytest.fixture(scope="session")
def model_dir(trained: Run) -> Path:
    return trained.path


@pytest.fixture(scope="session")
def val_pairs(corpus_dir: Path) -> tuple[list[str], list[str]]:
    """The first 50 validation pairs (en, de), without newlines."""
    return tuple(  # type: ignore[return-value]
        (corpus_dir / f"valid.{lang}").read_text("utf-8").splitlines() for lang in ("en", "de")
    )
