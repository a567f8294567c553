"""preprocess --workers: the data dir is the same byte for byte whatever the number of worker
processes, and the pool reads its input a few chunks ahead only."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nmtkit.data import workers
from nmtkit.data.preprocess import PreprocessConfig, preprocess
from nmtkit.data.text import CleanSettings
from nmtkit.data.workers import ChunkPool, chunked
from tests.processes import run

NUM_PAIRS = 3000
CHUNK = 256  # pairs per chunk here: 12 chunks, more than the 4 a pool of 2 keeps in flight
WORDS = [f"w{i}" for i in range(300)] + ["Straße", "l'été", "“quoted”", "can't", "1,000.5"]


def _generated_corpus(folder: Path) -> Path:
    """Random sentences with repeats, empty lines, over-long and lopsided pairs."""
    rng = random.Random(7)

    def sentence(low: int, high: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))

    pairs: list[tuple[str, str]] = []
    for number in range(NUM_PAIRS):
        roll = rng.random()
        if roll < 0.05 and pairs:
            pairs.append(rng.choice(pairs))  # duplicate
        elif roll < 0.07:
            pairs.append(("", sentence(1, 5)))  # empty
        elif roll < 0.09:
            pairs.append((sentence(1, 1), sentence(12, 14)))  # ratio
        else:
            pairs.append((sentence(1, 25 if number % 50 else 60), sentence(1, 25)))
    for split, chosen in (("train", pairs), ("valid", pairs[:100])):
        for side, lang in enumerate(("en", "de")):
            text = "".join(f"{pair[side]}\n" for pair in chosen)
            (folder / f"{split}.{lang}").write_text(text, encoding="utf-8")
    return folder


def _config(corpus: Path, destdir: Path) -> PreprocessConfig:
    return PreprocessConfig(
        src_lang="en",
        tgt_lang="de",
        trainpref=str(corpus / "train"),
        validpref=str(corpus / "valid"),
        destdir=str(destdir),
        vocab_size=400,
        clean=CleanSettings(max_len=40, max_ratio=4, dedup=True, max_pieces=50),
    )


def _same_data_dirs(first: Path, second: Path) -> None:
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    for name in names:
        if name != "manifest.json":
            assert (first / name).read_bytes() == (second / name).read_bytes(), name
    manifests = [json.loads((d / "manifest.json").read_text("utf-8")) for d in (first, second)]
    for manifest in manifests:
        del manifest["config"]["destdir"]
    assert manifests[0] == manifests[1]


def test_two_workers_write_the_same_data_dir_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "CHUNK_LINES", CHUNK)
    corpus = _generated_corpus(tmp_path)
    one = preprocess(_config(corpus, tmp_path / "one"), workers=1)
    two = preprocess(_config(corpus, tmp_path / "two"), workers=2)
    counts = {reason: n for reason, n in one.clean_counts.items() if n}
    assert set(counts) == {"empty", "too_long", "ratio", "duplicate", "too_many_pieces"}
    assert two.clean_counts == one.clean_counts
    _same_data_dirs(tmp_path / "one", tmp_path / "two")


def test_the_command_with_two_workers_writes_the_same_data_dir(tmp_path: Path) -> None:
    corpus = _generated_corpus(tmp_path)
    preprocess(_config(corpus, tmp_path / "library"))
    command = [sys.executable, "-m", "nmtkit", "preprocess", "-s", "en", "-t", "de", "-q"]
    command += ["--trainpref", str(corpus / "train"), "--validpref", str(corpus / "valid")]
    command += ["--destdir", str(tmp_path / "command"), "--vocab-size", "400", "--workers", "2"]
    command += ["--max-len", "40", "--max-ratio", "4", "--dedup", "--max-pieces", "50"]
    result = run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    _same_data_dirs(tmp_path / "library", tmp_path / "command")


def test_the_pool_keeps_results_in_order_and_reads_two_chunks_a_worker_ahead() -> None:
    pulled = []

    def numbers() -> Iterator[int]:
        for number in range(1000):
            pulled.append(number)
            yield number

    with ChunkPool(2) as pool:
        results = pool.map(sum, chunked(numbers(), 10))
        assert next(results) == sum(range(10))
        assert len(pulled) <= 10 * (2 * 2 + 1)
        assert list(results) == [sum(range(i, i + 10)) for i in range(10, 1000, 10)]
