"""Tests for nmtkit.data.trainset: the seeded, bounded sample SentencePiece learns from."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from nmtkit.data import trainset
from nmtkit.data.preprocess import PreprocessConfig, load_manifest, preprocess
from nmtkit.data.text import TextSettings
from nmtkit.data.trainset import sample_pairs, select_lines
from tests.toy_corpora import reverse_pairs, write_pairs


def test_sample_pairs_draws_distinct_sorted_indices_repeatably() -> None:
    sample = sample_pairs(10_000, 500, seed=3)
    assert sample.shape == (500,) and sample.dtype == np.int64
    assert np.all(np.diff(sample) > 0) and sample[0] >= 0 and sample[-1] < 10_000
    assert np.array_equal(sample, sample_pairs(10_000, 500, seed=3))
    assert not np.array_equal(sample, sample_pairs(10_000, 500, seed=4))


@pytest.mark.parametrize(("num_pairs", "size"), [(300, 300), (300, 1000), (300, 0), (0, 5)])
def test_sample_pairs_is_everything_when_the_corpus_is_small_or_size_is_0(
    num_pairs: int, size: int
) -> None:
    assert np.array_equal(sample_pairs(num_pairs, size, seed=1), np.arange(num_pairs))


def test_sample_pairs_spreads_over_the_corpus_in_memory_of_the_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(trainset, "_SAMPLE_BLOCK", 10_000)
    tracemalloc.start()
    try:
        sample = sample_pairs(2_000_000, 1000, seed=1)  # 16 MB as int64 indices
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000
    counts = np.bincount(sample // 200_000, minlength=10)  # ten slices of the corpus
    assert counts.min() > 50  # 100 expected in each


def test_select_lines_yields_the_lines_at_the_indices() -> None:
    lines = [f"line {i}" for i in range(10)]
    assert list(select_lines(lines, np.array([0, 3, 9]))) == ["line 0", "line 3", "line 9"]
    assert list(select_lines(lines, np.array([], dtype=np.int64))) == []


def _toy_config(folder: Path, destdir: str, **changes: object) -> PreprocessConfig:
    return PreprocessConfig(
        src_lang="src",
        tgt_lang="tgt",
        trainpref=str(folder / "train"),
        destdir=str(folder / destdir),
        text=TextSettings(normalize=False),
        vocab_size=40,
        **changes,  # type: ignore[arg-type]
    )


def test_subwords_are_learned_from_the_seeded_sample_of_pairs_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairs = reverse_pairs(400, seed=5)
    write_pairs(tmp_path / "train", pairs)
    learned: list[list[str]] = []

    def recording(lines: object, **options: object) -> bytes:
        learned.append(list(lines))  # type: ignore[call-overload]
        return real(learned[-1], **options)  # type: ignore[arg-type]

    real = trainset.train_sentencepiece
    monkeypatch.setattr(trainset, "train_sentencepiece", recording)
    for destdir in ("first", "second"):
        preprocess(_toy_config(tmp_path, destdir, subword_sample=50))
    preprocess(_toy_config(tmp_path, "whole", subword_sample=400))

    first, second, whole = learned
    chosen = sample_pairs(400, 50, seed=1)
    assert first == [pairs[i][0] for i in chosen] + [pairs[i][1] for i in chosen]
    assert second == first
    assert whole == [src for src, _ in pairs] + [tgt for _, tgt in pairs]  # as before sampling
    models = [(tmp_path / name / "spm.model").read_bytes() for name in ("first", "second")]
    assert models[0] == models[1]
    assert load_manifest(tmp_path / "first")["config"]["subword_sample"] == 50
