"""Concatenation augmentation: which pairs are joined, their lengths, and the joined batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmtkit.config import TrainConfig
from nmtkit.data.batching import epoch_batches
from nmtkit.data.concat import ConcatPolicy, joined_lengths
from nmtkit.data.dataset import TokenDataset, write_dataset
from nmtkit.data.text import BOS_ID, EOS_ID
from nmtkit.errors import ConfigError
from nmtkit.training.data import EpochExamples, ParallelSplit


@settings(max_examples=40)
@given(
    st.integers(2, 500),
    st.floats(0.0, 2.0),
    st.integers(2, 5),
    st.sampled_from(["consecutive", "random"]),
    st.integers(0, 9),
)
def test_joined_examples_have_2_to_max_parts_valid_pairs(
    num: int, rate: float, max_parts: int, mode: str, seed: int
) -> None:
    policy = ConcatPolicy(rate=rate, max_parts=max_parts, mode=mode)
    rows = policy.joined(num, np.random.default_rng(seed))
    assert rows.shape == (round(rate * num), max_parts)
    for row in rows:
        pairs = row[row >= 0]
        assert (row[len(pairs) :] == -1).all()  # padding only at the end
        assert 2 <= len(pairs) <= min(max_parts, num)
        assert pairs.max() < num
        if mode == "consecutive":
            assert (np.diff(pairs) == 1).all()


def test_the_number_of_parts_is_spread_over_2_to_max() -> None:
    rows = ConcatPolicy(rate=1.0, max_parts=4).joined(3000, np.random.default_rng(0))
    counts = np.bincount((rows >= 0).sum(axis=1), minlength=5)[2:]
    assert counts.min() > 800  # about 1000 each of 2, 3 and 4 parts


def test_joined_lengths_sum_the_pairs() -> None:
    lengths = np.array([3, 5, 7, 11])
    joined = np.array([[0, 1, -1], [1, 2, 3]])
    assert joined_lengths(lengths, joined).tolist() == [8, 23]
    assert joined_lengths(lengths, np.empty((0, 3), dtype=np.int64)).tolist() == []


def make_split(folder: Path, src: list[list[int]], tgt: list[list[int]]) -> ParallelSplit:
    write_dataset(folder / "train.src", src)
    write_dataset(folder / "train.tgt", tgt)
    return ParallelSplit(
        src=TokenDataset(folder / "train.src"), tgt=TokenDataset(folder / "train.tgt")
    )


def test_a_joined_example_is_its_pairs_end_to_end_with_one_eos(tmp_path: Path) -> None:
    src = [[10 + i] * (i + 1) for i in range(6)]  # pair i: i + 1 copies of 10 + i
    tgt = [[20 + i] * (i + 2) for i in range(6)]
    split = make_split(tmp_path, src, tgt)
    examples = EpochExamples.of(split, ConcatPolicy(rate=0.5, max_parts=3), seed=1, epoch=1)
    assert len(examples) == 6 + 3
    joined = examples.joined[0]
    pairs = [int(i) for i in joined if i >= 0]
    batch = examples.batch(np.array([6, 2]))
    want_src = [t for i in pairs for t in src[i]] + [EOS_ID]
    want_tgt = [t for i in pairs for t in tgt[i]]
    assert batch.src[0, : len(want_src)].tolist() == want_src
    assert batch.src_lengths.tolist() == [len(want_src), len(src[2]) + 1]
    assert batch.tgt_in[0, : len(want_tgt) + 1].tolist() == [BOS_ID, *want_tgt]
    assert batch.tgt_out[0, : len(want_tgt) + 1].tolist() == [*want_tgt, EOS_ID]
    assert examples.target_tokens(np.array([6, 2])) == batch.num_tgt_tokens
    assert examples.src_lengths[6] == len(want_src) - 1


def test_without_concatenation_an_epoch_is_batched_as_before(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    src = [list(rng.integers(4, 50, rng.integers(1, 20))) for _ in range(300)]
    tgt = [list(rng.integers(4, 50, rng.integers(1, 20))) for _ in range(300)]
    split = make_split(tmp_path, src, tgt)
    examples = EpochExamples.of(split, ConcatPolicy(), seed=3, epoch=2)
    mine = examples.batches(max_tokens=200, max_sentences=None, seed=3, epoch=2)
    before = epoch_batches(split.src.lengths, split.tgt.lengths, max_tokens=200, seed=3, epoch=2)
    assert [b.tolist() for b in mine] == [b.tolist() for b in before]


def test_joined_examples_are_a_pure_function_of_seed_and_epoch(tmp_path: Path) -> None:
    split = make_split(tmp_path, [[5]] * 50, [[6]] * 50)
    policy = ConcatPolicy(rate=0.4, max_parts=3, mode="random")
    first = EpochExamples.of(split, policy, seed=7, epoch=3).joined
    assert (EpochExamples.of(split, policy, seed=7, epoch=3).joined == first).all()
    assert not np.array_equal(EpochExamples.of(split, policy, seed=7, epoch=4).joined, first)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("concat_rate", -0.1, "train.concat_rate must be between 0 and 10"),
        ("concat_max", 1, "train.concat_max must be at least 2"),
        ("concat_mode", "consecutiv", "consecutive"),
    ],
)
def test_bad_concatenation_settings_are_refused(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TrainConfig(**{key: value})  # type: ignore[arg-type]
