"""Length limits hold on what the model sees: pieces bounded at preprocess time and checked when
training loads a data dir; translate and align share one policy for long inputs, and decode in
batches under a token budget."""

from __future__ import annotations

import io
import json
import logging
import random
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from nmtkit.alignment.attention_links import align_corpus
from nmtkit.data.dataset import TokenDataset, write_dataset
from nmtkit.data.preprocess import load_manifest, preprocess, summary_table
from nmtkit.data.text import CleanSettings
from nmtkit.errors import ConfigError, DataError
from nmtkit.search import GreedySearch
from nmtkit.search.decode import decode_sequences
from nmtkit.search.length_policy import LengthPolicy
from nmtkit.training.data import TrainingData
from tests.toy_corpora import SYMBOLS, reverse_pairs, toy_config
from tests.unit.test_models import random_ids, tiny_model

# One whitespace token of random symbols: thousands of pieces (longer than SentencePiece
# trains on, 4192 bytes, so the vocabulary does not learn it).
LONG_WORD = "".join(random.Random(0).choice(SYMBOLS) for _ in range(5000))


def _preprocess(folder: Path, train, valid, **clean: int) -> tuple[Path, object]:
    config = toy_config(folder, train, valid, CleanSettings(**clean))
    return folder / "data", preprocess(config)


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A toy data dir whose training corpus holds two pairs with a side of one long word, and
    whose validation corpus holds one."""
    train = reverse_pairs(200, seed=1)
    train[10] = (LONG_WORD, "a b c")
    train[20] = ("a b c", LONG_WORD)
    valid = reverse_pairs(5, seed=2)
    valid[1] = (LONG_WORD, "a")
    return _preprocess(tmp_path_factory.mktemp("bounded"), train, valid)


# ------------------------------------------------------------------------------ preprocess


def test_training_pairs_over_max_pieces_are_dropped_and_counted(bounded) -> None:
    data_dir, summary = bounded
    assert summary.clean_counts["too_many_pieces"] == 2
    assert summary.clean_counts["too_long"] == 0  # one whitespace token: the word filter passes
    train = summary.splits[0]
    assert (train.num_lines, train.num_sentences) == (200, 198)
    for lang in ("src", "tgt"):
        assert TokenDataset(data_dir / f"train.{lang}").lengths.max() <= 250
    manifest = load_manifest(data_dir)
    assert manifest["config"]["clean"]["max_pieces"] == 250
    assert manifest["clean_counts"]["too_many_pieces"] == 2
    assert not list(data_dir.glob("train.encoded.*"))


def test_heldout_sentences_over_max_pieces_are_cut_and_counted_not_dropped(bounded) -> None:
    data_dir, summary = bounded
    valid = summary.splits[1]
    assert (valid.num_lines, valid.num_sentences) == (5, 5)
    assert valid.num_cut == {"src": 1, "tgt": 0}
    assert TokenDataset(data_dir / "valid.src").lengths[1] == 250
    raw = (data_dir / "valid.raw.src").read_text("utf-8").splitlines()
    assert raw[1] == LONG_WORD  # the reference text stays whole
    assert load_manifest(data_dir)["splits"]["valid"]["num_cut"] == {"src": 1, "tgt": 0}


def test_summary_table_shows_the_pairs_dropped_and_the_sentences_cut(bounded) -> None:
    _, summary = bounded
    console = Console(file=io.StringIO(), width=200)
    console.print(summary_table(summary))
    text = " ".join(console.file.getvalue().split())
    assert "too_many_pieces 2" in text
    assert "valid cut to 250 pieces: src 1" in text


def test_a_corpus_with_no_pair_within_max_pieces_is_an_error(tmp_path: Path) -> None:
    train = [(LONG_WORD, "a b c d e f"), ("g h i j k l", LONG_WORD)]
    with pytest.raises(DataError, match="no training pairs left") as error:
        _preprocess(tmp_path, train, [("a", "b")], max_pieces=100)
    assert error.value.hint and "max_pieces" in error.value.hint
    assert not (tmp_path / "data").exists()


def test_max_pieces_below_1_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="max_pieces"):
        CleanSettings(max_pieces=0)


# ------------------------------------------------------------------------------ train loads


def _set_limit(data_dir: Path, limit: int | None) -> None:
    path = data_dir / "manifest.json"
    manifest = json.loads(path.read_text("utf-8"))
    if limit is None:
        del manifest["config"]["clean"]["max_pieces"]
    else:
        manifest["config"]["clean"]["max_pieces"] = limit
    path.write_text(json.dumps(manifest), "utf-8")


def test_training_loads_a_data_dir_within_its_limit(bounded) -> None:
    data_dir, _ = bounded
    data = TrainingData.load(data_dir)
    assert len(data.train) == 198


def test_training_refuses_a_data_dir_whose_sentences_break_its_limit(
    bounded, tmp_path: Path
) -> None:
    import shutil

    data_dir = Path(shutil.copytree(bounded[0], tmp_path / "data"))
    _set_limit(data_dir, 5)
    with pytest.raises(DataError) as error:
        TrainingData.load(data_dir)
    assert error.value.where == str(data_dir)
    assert "over this data dir's limit of 5" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_data_dir_without_a_recorded_limit_trains_unless_a_sentence_is_absurd(
    bounded, tmp_path: Path
) -> None:
    import shutil

    data_dir = Path(shutil.copytree(bounded[0], tmp_path / "data"))
    _set_limit(data_dir, None)
    assert len(TrainingData.load(data_dir).train) == 198  # an old data dir still trains
    sentences = [TokenDataset(data_dir / "train.src")[i] for i in range(198)]
    sentences[7] = np.full(800_000, 5)
    write_dataset(data_dir / "train.src", sentences)
    with pytest.raises(DataError, match=r"sentence 8 of train.src has 800,000 pieces, over 1024"):
        TrainingData.load(data_dir)


# ------------------------------------------------------------------------------ the policy


def test_length_policy_cuts_over_its_cap_with_a_warning_naming_the_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy = LengthPolicy(max_source_len=4)
    with caplog.at_level(logging.WARNING):
        assert policy.cut([5, 6, 7], what="input line 1") == [5, 6, 7]
        assert policy.cut([5, 6, 7, 8, 9, 10], what="input line 2") == [5, 6, 7, 8]
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "input line 2" in message and "6 pieces" in message and "--max-source-len" in message
    assert LengthPolicy(max_source_len=0).cut(list(range(5000)), what="x") == list(range(5000))


@pytest.mark.parametrize(
    ("options", "flag"),
    [({"max_source_len": -1}, "--max-source-len"), ({"max_tokens": 0}, "--max-tokens")],
)
def test_length_policy_rejects_bounds_out_of_range(options: dict, flag: str) -> None:
    with pytest.raises(ConfigError, match=flag):
        LengthPolicy(**options)


def test_batches_hold_fewer_long_sentences_and_a_very_long_one_alone() -> None:
    policy = LengthPolicy(max_tokens=100)
    lengths = [5] * 30 + [40, 40, 40, 3000]
    batches = policy.batches(lengths, lengths, max_sentences=16)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        widest = max(lengths[i] for i in batch) + 1
        assert len(batch) <= 16
        assert len(batch) == 1 or len(batch) * widest <= 100
    assert [33] in [list(b) for b in batches]  # the 3000-piece sentence is alone
    assert [len(b) for b in batches if lengths[b[0]] == 40] == [2, 1]


class _Spy(GreedySearch):
    """Greedy search that records the shape of every batch it is given."""

    def __init__(self) -> None:
        super().__init__(GreedySearch.Config())
        self.shapes: list[tuple[int, int]] = []

    def search(self, model, src, src_lengths, **kwargs):
        self.shapes.append(tuple(src.shape))
        return super().search(model, src, src_lengths, **kwargs)


def test_a_3000_piece_input_decodes_alone_within_the_token_budget() -> None:
    model = tiny_model()
    sequences = random_ids([3000, 7, 9, 8, 6])
    spy = _Spy()
    found = decode_sequences(
        model,
        sequences,
        spy,
        batch_size=64,
        max_tokens=1000,
        max_len_a=0.0,
        max_len_b=3,
    )
    assert len(found) == 5 and all(len(hyps) == 1 for hyps in found)
    assert sorted(spy.shapes) == [(1, 3001), (4, 10)]  # the long one alone, EOS included


class _Loaded:
    """The parts of a LoadedModel that align_corpus uses: a model and two text pipelines."""

    class _Text:
        def encode(self, line: str) -> list[int]:
            return [4 + (ord(ch) % 16) for ch in line.replace(" ", "")]

        def id_to_piece(self, ids) -> list[str]:
            return ["\u2581x" for _ in ids]

    def __init__(self, model) -> None:
        self.model = model
        self.src_text = self._Text()
        self.tgt_text = self._Text()


def test_align_cuts_a_long_pair_and_batches_under_the_token_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = tiny_model()
    shapes: list[tuple[int, ...]] = []
    force_decode = model.force_decode

    def spy(batch):
        weights = force_decode(batch)
        shapes.append(tuple(weights.shape))
        return weights

    model.force_decode = spy  # type: ignore[method-assign]
    pairs = [("abc de", "fg hi"), ("x" * 10_000, "y" * 10_000), ("a b c", "d e")]
    policy = LengthPolicy(max_source_len=300, max_tokens=200)
    with caplog.at_level(logging.WARNING):
        items = list(
            align_corpus(
                _Loaded(model),
                [s for s, _ in pairs],
                [t for _, t in pairs],
                batch_size=64,
                lengths=policy,
            )
        )
    assert len(items) == 3
    assert items[1].weights.shape == (300, 300)  # one word a piece, cut to 300 each side
    assert (1, 301, 301) in shapes  # the long pair alone, EOS row and column included
    assert max(b * max(t, s) for b, t, s in shapes if b > 1) <= 200
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "pair 2" in warned and "10000 pieces" in warned
