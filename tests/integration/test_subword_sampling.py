"""Subword regularization: ``preprocess --sampled-segmentations K`` writes the training pairs K
times more, each in a segmentation SentencePiece samples (BPE-dropout here), and training reads
one of them an epoch, in turn."""

from __future__ import annotations

import gzip
import io
import json
import logging
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm
from rich.console import Console

from nmtkit.config import load_config
from nmtkit.data.dataset import TokenDataset
from nmtkit.data.preprocess import PreprocessConfig, preprocess, summary_table
from nmtkit.data.workers import encode_lines, sample_lines
from nmtkit.errors import ConfigError
from nmtkit.training.data import Epochs, TrainingData
from nmtkit.training.trainer import train

NUM_TRAIN = 600
SAMPLES = 2


def _head(path: Path, count: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return [next(stream).rstrip("\n") for _ in range(count)]


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first training and validation pairs of Multi30k en-de."""
    folder = tmp_path_factory.mktemp("corpus")
    for lang in ("en", "de"):
        for split, name, count in (("train", "train", NUM_TRAIN), ("valid", "val", 50)):
            lines = _head(shared_data / "multi30k" / f"{name}.{lang}.gz", count)
            (folder / f"{split}.{lang}").write_text("".join(f"{x}\n" for x in lines), "utf-8")
    return folder


def _config(corpus: Path, destdir: Path, samples: int = SAMPLES) -> PreprocessConfig:
    return PreprocessConfig(
        src_lang="en",
        tgt_lang="de",
        trainpref=str(corpus / "train"),
        validpref=str(corpus / "valid"),
        destdir=str(destdir),
        vocab_size=600,
        sampled_segmentations=samples,
    )


@pytest.fixture(scope="module")
def data_dir(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    destdir = tmp_path_factory.mktemp("out") / "data"
    summary = preprocess(_config(corpus, destdir))
    console = Console(file=io.StringIO(), width=200)
    console.print(summary_table(summary))
    shown = " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]
    assert f"{SAMPLES} sampled segmentations of train" in shown
    return destdir


def test_the_samples_hold_the_same_pairs_in_other_segmentations(data_dir: Path) -> None:
    manifest = json.loads((data_dir / "manifest.json").read_text("utf-8"))
    sampled = manifest["splits"]["train"]["sampled"]
    assert [entry["name"] for entry in sampled] == ["train.sampled1", "train.sampled2"]
    for lang in ("en", "de"):  # the target reads its own, trimmed model
        model = data_dir / manifest["spm_models"][lang]
        processor = spm.SentencePieceProcessor(model_file=str(model))
        best = TokenDataset(data_dir / f"train.{lang}")
        samples = [TokenDataset(data_dir / f"train.sampled{k}.{lang}") for k in (1, 2)]
        assert all(len(sample) == len(best) == NUM_TRAIN for sample in samples)
        for sample in samples:
            # the same text, pair for pair
            for i in range(len(best)):
                assert processor.decode(sample[i].tolist()) == processor.decode(best[i].tolist())
            # in more pieces: BPE-dropout skips merges
            differ = sum(not np.array_equal(sample[i], best[i]) for i in range(len(best)))
            assert differ > len(best) // 4
            assert sample.lengths.sum() > best.lengths.sum()
        assert not np.array_equal(samples[0].lengths, samples[1].lengths)


def test_preprocess_samples_the_same_segmentations_each_time(
    corpus: Path, data_dir: Path, tmp_path: Path
) -> None:
    preprocess(_config(corpus, tmp_path / "again"))
    for name in ("train.sampled1.en.bin", "train.sampled2.de.bin", "train.sampled2.de.idx"):
        assert (tmp_path / "again" / name).read_bytes() == (data_dir / name).read_bytes()


def test_a_sample_over_the_piece_limit_falls_back_to_the_one_best(data_dir: Path) -> None:
    model = data_dir / "spm.model"
    settings = {"model_path": str(model), "stamp": model.stat().st_mtime_ns}
    lines = ["a man in a blue shirt is standing on a ladder cleaning windows ."] * 20
    best_ids, best_lengths = encode_lines(lines, **settings)
    limit = int(best_lengths[0])
    ids, lengths = sample_lines((0, lines), alpha=0.5, seed=(1,), max_pieces=limit, **settings)
    assert (lengths <= limit).all()
    assert (lengths == limit).all()  # every sample at alpha 0.5 is longer, so each fell back
    assert np.array_equal(ids, best_ids)
    unbounded = sample_lines((0, lines), alpha=0.5, seed=(1,), max_pieces=1000, **settings)
    assert (unbounded[1] > limit).any()


def test_the_epochs_read_the_samples_in_turn(data_dir: Path) -> None:
    data = TrainingData.load(data_dir)
    assert len(data.train_sampled) == SAMPLES
    config = load_config(preset="tiny").train
    epochs = Epochs(data.epoch_splits(sampled=True), config)
    assert [epochs.split(e) for e in (1, 2, 3, 4)] == [
        data.train_sampled[0],
        data.train_sampled[1],
        data.train_sampled[0],
        data.train_sampled[1],
    ]
    first = epochs.examples(1).src_lengths.copy()
    assert not np.array_equal(epochs.examples(2).src_lengths, first)
    assert data.epoch_splits(sampled=False) == (data.train,)


def test_a_data_dir_without_samples_reads_the_one_best(corpus: Path, tmp_path: Path) -> None:
    preprocess(_config(corpus, tmp_path / "plain", samples=0))
    manifest = json.loads((tmp_path / "plain" / "manifest.json").read_text("utf-8"))
    assert "sampled" not in manifest["splits"]["train"]
    assert not list((tmp_path / "plain").glob("train.sampled*"))
    data = TrainingData.load(tmp_path / "plain")
    assert data.train_sampled == () and data.epoch_splits(sampled=True) == (data.train,)


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"sampled_segmentations": -1}, "sampled_segmentations"), ({"sampling_alpha": 0.0}, "(0, 1]")],
)
def test_bad_sampling_settings_are_config_errors(
    corpus: Path, tmp_path: Path, changes: dict[str, float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("]", r"\]")):
        PreprocessConfig(
            src_lang="en",
            tgt_lang="de",
            trainpref=str(corpus / "train"),
            destdir=str(tmp_path / "data"),
            **changes,  # type: ignore[arg-type]
        )


@pytest.mark.slow
def test_a_resumed_run_reads_the_same_samples(
    data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """N + M updates over several epochs (each in another segmentation) equal N, a stop, and
    M more after resuming; without the samples the losses differ."""
    common = ["train.log_every=1", "train.validate_every=100", "train.max_tokens=800"]

    def losses(model_dir: Path) -> list[float]:
        records = [json.loads(line) for line in (model_dir / "metrics.jsonl").open()]
        return [r["loss"] for r in records if r["kind"] == "train"]

    whole = load_config(preset="tiny", overrides=[*common, "train.max_updates=100"])
    with caplog.at_level(logging.INFO, logger="nmtkit"):
        result = train(data_dir, tmp_path / "whole", whole)
    assert "subword regularization: 2 sampled segmentations" in caplog.text
    assert result.epochs > 2  # the run went through both samples and back to the first
    first = load_config(preset="tiny", overrides=[*common, "train.max_updates=55"])
    train(data_dir, tmp_path / "split", first)
    train(data_dir, tmp_path / "split", whole, resume=True)
    assert losses(tmp_path / "split") == losses(tmp_path / "whole")
    one_best = load_config(
        preset="tiny",
        overrides=[*common, "train.max_updates=100", "train.sampled_segmentations=false"],
    )
    train(data_dir, tmp_path / "one-best", one_best)
    assert losses(tmp_path / "one-best") != losses(tmp_path / "whole")
