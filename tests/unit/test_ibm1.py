"""IBM Model 1 over token datasets: on a word-for-word corpus it finds every word's translation,
whatever the word order and with untranslated words; the sample is bounded and seeded."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from nmtkit.data.dataset import TokenDataset, write_dataset
from nmtkit.errors import ConfigError, DataError
from nmtkit.shortlist.ibm1 import LexicalTable, train_ibm1

SRC_VOCAB = 30  # ids 4..29 are words
TGT_VOCAB = 40
FILLER = 39  # a target word with no source word: NULL's


def translation(word: int) -> int:
    """The true translation of source word ``word``: a fixed permutation onto 4..29."""
    return 4 + (word - 4) * 7 % 26


def word_for_word(folder: Path, num_pairs: int, *, seed: int = 0) -> tuple[TokenDataset, ...]:
    """Pairs of 2-8 random words and their translations, shuffled, half with a filler word."""
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(num_pairs):
        words = [rng.randrange(4, SRC_VOCAB) for _ in range(rng.randint(2, 8))]
        out = [translation(w) for w in words] + ([FILLER] if rng.random() < 0.5 else [])
        rng.shuffle(out)
        src.append(words)
        tgt.append(out)
    write_dataset(folder / "train.src", src)
    write_dataset(folder / "train.tgt", tgt)
    return TokenDataset(folder / "train.src"), TokenDataset(folder / "train.tgt")


def learn(src: TokenDataset, tgt: TokenDataset, **options: int) -> LexicalTable:
    return train_ibm1(src, tgt, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB, **options)


def test_the_most_probable_target_of_each_source_word_is_its_translation(tmp_path: Path) -> None:
    table = learn(*word_for_word(tmp_path, 400))
    offsets, targets = table.best(1)
    for word in range(4, SRC_VOCAB):
        assert targets[offsets[word] : offsets[word + 1]].tolist() == [translation(word)]


def test_probabilities_of_each_source_word_sum_to_one(tmp_path: Path) -> None:
    table = learn(*word_for_word(tmp_path, 200))
    sums = np.bincount(table.src, weights=table.prob, minlength=SRC_VOCAB + 1)
    seen = np.unique(table.src)
    assert np.allclose(sums[seen], 1.0, atol=1e-5)
    null = table.src == table.null_id
    null_best = table.tgt[null][np.argmax(table.prob[null])]
    assert null_best == FILLER  # the untranslated word goes to NULL


def test_best_keeps_at_most_k_targets_most_probable_first_and_none_for_unseen_words() -> None:
    table = LexicalTable(
        src=np.array([4, 4, 4, 6, 7]),
        tgt=np.array([5, 6, 7, 5, 9]),
        prob=np.array([0.2, 0.5, 0.3, 1.0, 1.0], dtype=np.float32),
        tgt_counts=np.zeros(10, dtype=np.int64),
        num_pairs=1,
        null_id=7,
    )
    offsets, targets = table.best(2)
    assert offsets.tolist() == [0, 0, 0, 0, 0, 2, 2, 3]  # 5 unseen; 7 is NULL, left out
    assert targets.tolist() == [6, 7, 5]


def test_most_frequent_counts_target_words_of_the_sample(tmp_path: Path) -> None:
    table = learn(*word_for_word(tmp_path, 300))
    assert table.most_frequent(1).tolist() == [FILLER]  # in half the pairs, more than any word
    assert table.tgt_counts.sum() == TokenDataset(tmp_path / "train.tgt").num_tokens


def test_the_sample_is_bounded_by_pairs_and_cells_and_depends_on_the_seed(tmp_path: Path) -> None:
    src, tgt = word_for_word(tmp_path, 300)
    assert learn(src, tgt, max_pairs=50).num_pairs == 50
    assert learn(src, tgt, max_cells=100).num_pairs < 20
    assert learn(src, tgt, max_cells=1).num_pairs == 1  # never empty
    one, again, other = (learn(src, tgt, max_pairs=30, seed=s) for s in (1, 1, 2))
    assert np.array_equal(one.prob, again.prob) and np.array_equal(one.src, again.src)
    assert not (one.src.size == other.src.size and np.array_equal(one.prob, other.prob))


def test_bad_options_and_mismatched_datasets_are_user_errors(tmp_path: Path) -> None:
    src, tgt = word_for_word(tmp_path, 20)
    with pytest.raises(ConfigError, match="iterations"):
        learn(src, tgt, iterations=0)
    write_dataset(tmp_path / "short.tgt", [[5]])
    with pytest.raises(DataError, match="sentences"):
        learn(src, TokenDataset(tmp_path / "short.tgt"))
