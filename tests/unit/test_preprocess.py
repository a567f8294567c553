"""Tests for nmtkit.data.preprocess on a slice of Multi30k and on hand-made dirty corpora."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
from pathlib import Path

import pytest
from rich.console import Console

from nmtkit.data.dataset import TokenDataset
from nmtkit.data.preprocess import (
    PreprocessConfig,
    PreprocessSummary,
    load_manifest,
    load_pipeline,
    preprocess,
    summary_table,
)
from nmtkit.data.text import UNK_ID, CleanSettings, TextSettings
from nmtkit.errors import ConfigError, DataError

NUM_TRAIN = 2000
NUM_HELDOUT = 200


def _head(path: Path, count: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as stream:
        return [next(stream).rstrip("\n") for _ in range(count)]


def _write(path: Path, lines: list[str]) -> Path:
    text = "".join(f"{line}\n" for line in lines).encode()
    path.write_bytes(gzip.compress(text, mtime=0) if path.suffix == ".gz" else text)
    return path


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Multi30k slice: plain train and valid, gzipped test; returns the folder."""
    folder = tmp_path_factory.mktemp("corpus")
    multi30k = shared_data / "multi30k"
    for lang in ("en", "de"):
        _write(folder / f"train.{lang}", _head(multi30k / f"train.{lang}.gz", NUM_TRAIN))
        _write(folder / f"valid.{lang}", _head(multi30k / f"val.{lang}.gz", NUM_HELDOUT))
        test = _head(multi30k / f"test_2016_flickr.{lang}.gz", NUM_HELDOUT)
        _write(folder / f"test.{lang}.gz", test)
    return folder


def _config(corpus: Path, destdir: Path, **changes: object) -> PreprocessConfig:
    config = PreprocessConfig(
        src_lang="en",
        tgt_lang="de",
        trainpref=str(corpus / "train"),
        validpref=str(corpus / "valid"),
        testpref=str(corpus / "test"),
        destdir=str(destdir),
        vocab_size=500,
    )
    return dataclasses.replace(config, **changes)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def small_corpus(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 500 training pairs of ``corpus``, without held-out splits."""
    folder = tmp_path_factory.mktemp("small")
    for lang in ("en", "de"):
        lines = (corpus / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        _write(folder / f"train.{lang}", lines[:500])
    return folder


@pytest.fixture(scope="module")
def data_dir(
    corpus: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, PreprocessSummary]:
    destdir = tmp_path_factory.mktemp("out") / "data"
    return destdir, preprocess(_config(corpus, destdir))


def test_data_dir_holds_models_datasets_raw_heldout_and_manifest(
    data_dir: tuple[Path, PreprocessSummary],
) -> None:
    destdir, _ = data_dir
    expected = {
        "manifest.json",
        "spm.model",
        "spm.de.model",  # the target's own, trimmed to the pieces its training side uses
        "valid.raw.en",
        "valid.raw.de",
        "test.raw.en",
        "test.raw.de",
    }
    expected |= {
        f"{s}.{lang}.{e}"
        for s in ("train", "valid", "test")
        for lang in ("en", "de")
        for e in ("bin", "idx")
    }
    assert {p.name for p in destdir.iterdir()} == expected
    assert [p.name for p in destdir.parent.iterdir()] == ["data"]  # no staging folder left


def test_manifest_records_inputs_settings_and_counts(
    corpus: Path, data_dir: tuple[Path, PreprocessSummary]
) -> None:
    destdir, summary = data_dir
    manifest = load_manifest(destdir)
    assert manifest["config"] == dataclasses.asdict(_config(corpus, destdir))
    test_de = manifest["inputs"]["test"]["de"]
    assert test_de["path"] == str((corpus / "test.de.gz").resolve())
    assert test_de["sha256"] == hashlib.sha256((corpus / "test.de.gz").read_bytes()).hexdigest()
    assert test_de["num_lines"] == NUM_HELDOUT
    assert manifest["special_ids"] == {"pad": 0, "unk": 1, "bos": 2, "eos": 3}
    assert manifest["vocab_sizes"] == summary.vocab_sizes
    assert manifest["vocab_sizes"]["en"] == 500 > manifest["vocab_sizes"]["de"]
    assert manifest["spm_models"] == {"en": "spm.model", "de": "spm.de.model"}
    train = manifest["splits"]["train"]
    assert train["num_lines"] == train["num_sentences"] == NUM_TRAIN
    assert train["datasets"]["de"] == {"prefix": "train.de", "dtype": "uint16"}
    assert train["num_tokens"]["de"] == TokenDataset(destdir / "train.de").num_tokens
    assert manifest["splits"]["valid"]["raw"] == {"en": "valid.raw.en", "de": "valid.raw.de"}
    assert set(manifest["clean_counts"]) >= {
        "empty",
        "too_long",
        "ratio",
        "duplicate",
        "invalid_utf8",
    }


def test_heldout_splits_are_kept_whole_and_raw(
    corpus: Path, data_dir: tuple[Path, PreprocessSummary]
) -> None:
    destdir, summary = data_dir
    assert [(s.name, s.num_lines, s.num_sentences) for s in summary.splits] == [
        ("train", NUM_TRAIN, NUM_TRAIN),
        ("valid", NUM_HELDOUT, NUM_HELDOUT),
        ("test", NUM_HELDOUT, NUM_HELDOUT),
    ]
    raw = (destdir / "valid.raw.de").read_text(encoding="utf-8")
    assert raw == (corpus / "valid.de").read_text(encoding="utf-8")
    test_raw = (destdir / "test.raw.en").read_text(encoding="utf-8")
    assert test_raw == gzip.decompress((corpus / "test.en.gz").read_bytes()).decode()


def test_datasets_decode_to_the_prepared_text(data_dir: tuple[Path, PreprocessSummary]) -> None:
    destdir, _ = data_dir
    pipeline = load_pipeline(destdir, "de")
    dataset = TokenDataset(destdir / "valid.de")
    lines = (destdir / "valid.raw.de").read_text(encoding="utf-8").splitlines()
    for ids, line in zip((dataset[i] for i in range(len(dataset))), lines, strict=True):
        assert ids.tolist() == pipeline.encode(line)
        if UNK_ID not in ids:
            assert pipeline.decode(ids) == " ".join(pipeline.prepare(line).split())


def test_summary_table_shows_every_split(data_dir: tuple[Path, PreprocessSummary]) -> None:
    _, summary = data_dir
    out = io.StringIO()
    Console(file=out, width=120).print(summary_table(summary))
    text = out.getvalue()
    assert all(name in text for name in ("train", "valid", "test", "2,000", "de tokens"))


def test_preprocess_is_deterministic(small_corpus: Path, tmp_path: Path) -> None:
    for name in ("first", "second"):
        preprocess(_config(small_corpus, tmp_path / name, validpref=None, testpref=None))
    for name in ("spm.model", "spm.de.model", "train.en.bin", "train.de.bin", "train.de.idx"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()


def _dirty_corpus(folder: Path) -> Path:
    good = [
        (f"a small dog number {i} runs", f"ein kleiner hund nummer {i} rennt") for i in range(40)
    ]
    dirty = [
        ("", "ein leerer satz"),
        ("an empty target", "   "),
        ("word " * 30, "wort " * 30),
        ("one", "eins zwei drei vier fünf sechs sieben acht neun zehn"),
        good[0],
        good[1],
    ]
    pairs = good + dirty
    _write(folder / "train.en", [src for src, _ in pairs])
    _write(folder / "train.de", [tgt for _, tgt in pairs])
    _write(folder / "valid.en", ["", "word " * 30])
    _write(folder / "valid.de", ["leer", "wort " * 30])
    return folder / "train"


def test_cleaning_drops_dirty_training_pairs_and_counts_reasons(tmp_path: Path) -> None:
    trainpref = _dirty_corpus(tmp_path)
    config = _config(
        tmp_path,
        tmp_path / "out",
        trainpref=str(trainpref),
        testpref=None,
        vocab_size=100,
        clean=CleanSettings(max_len=20, dedup=True),
    )
    summary = preprocess(config)
    counts = {reason: n for reason, n in summary.clean_counts.items() if n}
    assert counts == {"empty": 2, "too_long": 1, "ratio": 1, "duplicate": 2}
    train, valid = summary.splits
    assert (train.num_lines, train.num_sentences) == (46, 40)
    assert (valid.num_lines, valid.num_sentences) == (2, 2)  # held-out data is never cleaned
    assert load_manifest(tmp_path / "out")["clean_counts"]["duplicate"] == 2


def test_mismatched_line_counts_name_both_files_and_counts_and_write_nothing(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "train.en", ["a", "b", "c"])
    _write(tmp_path / "train.de.gz", ["a", "b"])
    config = _config(tmp_path, tmp_path / "out", validpref=None, testpref=None)
    with pytest.raises(DataError) as error:
        preprocess(config)
    message = str(error.value)
    assert str(tmp_path / "train.en") in message and str(tmp_path / "train.de.gz") in message
    assert "3 lines" in message and "has 2" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.de.gz", "train.en"]


def test_mismatch_in_test_split_is_found_before_any_work(corpus: Path, tmp_path: Path) -> None:
    _write(tmp_path / "test.en", ["a", "b"])
    _write(tmp_path / "test.de", ["a"])
    mismatch = r"test corpus: .*test\.en has 2 lines but .*test\.de has 1"
    with pytest.raises(DataError, match=mismatch):
        preprocess(_config(corpus, tmp_path / "out", testpref=str(tmp_path / "test")))
    assert not (tmp_path / "out").exists()


def test_missing_corpus_is_a_data_error(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        preprocess(_config(corpus, tmp_path / "out", validpref=str(tmp_path / "nope")))


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    _write(tmp_path / "train.en", ["a b", "c d", "e f"])
    (tmp_path / "train.de").write_bytes(b"a b\nc d\n\xff\xfe\n")
    with pytest.raises(DataError) as error:
        preprocess(
            _config(tmp_path, tmp_path / "out", validpref=None, testpref=None, vocab_size=20)
        )
    assert error.value.where == f"{tmp_path / 'train.de'}:3"
    assert not any(p.name.startswith("out") for p in tmp_path.iterdir())


def test_skip_invalid_drops_and_counts_the_pair(tmp_path: Path) -> None:
    _write(tmp_path / "train.en", ["a b", "c d", "e f"])
    (tmp_path / "train.de").write_bytes(b"a b\n\xff\xfe\ne f\n")
    _write(tmp_path / "valid.en", ["x", "y"])
    (tmp_path / "valid.de").write_bytes(b"\xc3\n y\n")
    config = _config(tmp_path, tmp_path / "out", testpref=None, vocab_size=20, skip_invalid=True)
    summary = preprocess(config)
    assert summary.clean_counts["invalid_utf8"] == 1
    assert [(s.num_lines, s.num_sentences) for s in summary.splits] == [(3, 2), (2, 1)]
    assert (tmp_path / "out" / "valid.raw.en").read_text() == "y\n"


def test_empty_training_set_after_cleaning_raises_with_hint(tmp_path: Path) -> None:
    _write(tmp_path / "train.en", ["a", "", "b"])
    _write(tmp_path / "train.de", ["", "c", ""])
    with pytest.raises(DataError, match="no training pairs left") as error:
        preprocess(_config(tmp_path, tmp_path / "out", validpref=None, testpref=None))
    assert error.value.hint and "min_len" in error.value.hint
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.de", "train.en"]


def test_separate_models_per_language(small_corpus: Path, tmp_path: Path) -> None:
    config = _config(
        small_corpus,
        tmp_path / "out",
        validpref=None,
        testpref=None,
        joint=False,
        subword="unigram",
        vocab_size=300,
    )
    summary = preprocess(config)
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"spm.en.model", "spm.de.model"} <= names and "spm.model" not in names
    assert load_manifest(tmp_path / "out")["spm_models"] == {
        "en": "spm.en.model",
        "de": "spm.de.model",
    }
    en, de = load_pipeline(tmp_path / "out", "en"), load_pipeline(tmp_path / "out", "de")
    assert en.spm_model != de.spm_model
    assert summary.vocab_sizes == {"en": en.vocab_size, "de": de.vocab_size}


def test_text_settings_reach_the_pipeline(small_corpus: Path, tmp_path: Path) -> None:
    settings = TextSettings(moses_tokenize=True, lowercase=True)
    preprocess(
        _config(small_corpus, tmp_path / "out", validpref=None, testpref=None, text=settings)
    )
    pipeline = load_pipeline(tmp_path / "out", "en")
    assert pipeline.settings == settings
    assert pipeline.decode(pipeline.encode("A Dog, running.")) == "a dog, running."


def test_rerun_replaces_a_data_dir_and_a_failed_run_keeps_it(
    small_corpus: Path, tmp_path: Path
) -> None:
    destdir = tmp_path / "out"
    preprocess(_config(small_corpus, destdir, validpref=None, testpref=None, vocab_size=300))
    preprocess(_config(small_corpus, destdir, validpref=None, testpref=None, vocab_size=400))
    assert load_manifest(destdir)["vocab_sizes"]["en"] == 400
    with pytest.raises(ConfigError):
        preprocess(_config(small_corpus, destdir, subword="wordpiece"))
    _write(tmp_path / "bad.en", ["a"])
    _write(tmp_path / "bad.de", [""])
    with pytest.raises(DataError):
        preprocess(
            _config(
                tmp_path, destdir, trainpref=str(tmp_path / "bad"), validpref=None, testpref=None
            )
        )
    assert load_manifest(destdir)["vocab_sizes"]["en"] == 400
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.de", "bad.en", "out"]


def test_refuses_to_replace_a_folder_that_is_not_a_data_dir(corpus: Path, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "thesis.tex").write_text("precious")
    with pytest.raises(DataError, match="not an nmtkit data directory"):
        preprocess(_config(corpus, tmp_path / "out"))
    assert (tmp_path / "out" / "thesis.tex").read_text() == "precious"


def test_load_manifest_rejects_a_plain_folder(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not an nmtkit data directory, run nmtkit preprocess"):
        load_manifest(tmp_path)


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"tgt_lang": "en"}, "tgt_lang"),
        ({"src_lang": ""}, "src_lang"),
        ({"subword": "wordpiece"}, "subword"),
        ({"vocab_size": 3}, "vocab_size"),
    ],
)
def test_bad_settings_are_config_errors(
    corpus: Path, tmp_path: Path, changes: dict, key: str
) -> None:
    with pytest.raises(ConfigError) as error:
        preprocess(_config(corpus, tmp_path / "out", **changes))
    assert error.value.where == key
    assert not (tmp_path / "out").exists()
