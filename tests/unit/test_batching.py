"""Token-budget batching: each sentence once, within budget, a pure function of the seed."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nmtkit.data.batching import batch_by_tokens, collate, epoch_batches

lengths = st.lists(st.integers(1, 60), min_size=1, max_size=300)


@settings(max_examples=60)
@given(lengths, lengths, st.integers(1, 800), st.integers(0, 3))
def test_every_sentence_lands_in_exactly_one_batch_within_budget(
    src: list[int], tgt: list[int], max_tokens: int, seed: int
) -> None:
    n = min(len(src), len(tgt))
    src_len, tgt_len = np.array(src[:n]), np.array(tgt[:n])
    batches = batch_by_tokens(
        src_len, tgt_len, max_tokens=max_tokens, rng=np.random.default_rng(seed)
    )
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(n))
    for batch in batches:
        widest = int(np.maximum(src_len[batch], tgt_len[batch]).max()) + 1
        assert len(batch) == 1 or len(batch) * widest <= max_tokens


@settings(max_examples=60)
@given(lengths, lengths, st.integers(1, 800), st.integers(1, 20), st.integers(0, 3))
def test_a_sentence_cap_holds_together_with_the_token_budget(
    src: list[int], tgt: list[int], max_tokens: int, max_sentences: int, seed: int
) -> None:
    n = min(len(src), len(tgt))
    src_len, tgt_len = np.array(src[:n]), np.array(tgt[:n])
    batches = batch_by_tokens(
        src_len,
        tgt_len,
        max_tokens=max_tokens,
        max_sentences=max_sentences,
        rng=np.random.default_rng(seed),
    )
    assert sorted(np.concatenate(batches).tolist()) == list(range(n))
    for batch in batches:
        widest = int(np.maximum(src_len[batch], tgt_len[batch]).max()) + 1
        assert len(batch) <= max_sentences
        assert len(batch) == 1 or len(batch) * widest <= max_tokens


def test_with_a_large_token_budget_batches_hold_exactly_max_sentences() -> None:
    lengths_ = np.random.default_rng(0).integers(1, 50, 170)
    batches = batch_by_tokens(lengths_, lengths_, max_tokens=100_000, max_sentences=80)
    assert sorted(len(batch) for batch in batches) == [10, 80, 80]


def test_epoch_order_depends_only_on_seed_and_epoch() -> None:
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 30, 500), rng.integers(1, 30, 500)
    first = epoch_batches(src, tgt, max_tokens=200, seed=3, epoch=2)
    again = epoch_batches(src, tgt, max_tokens=200, seed=3, epoch=2)
    other = epoch_batches(src, tgt, max_tokens=200, seed=3, epoch=3)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=False))


def test_collate_adds_bos_and_eos_and_pads() -> None:
    batch = collate([[5, 6], [7]], [[8], [9, 10, 11]], [4, 2])
    assert batch.src.tolist() == [[5, 6, 3], [7, 3, 0]]
    assert batch.src_lengths.tolist() == [3, 2]
    assert batch.tgt_in.tolist() == [[2, 8, 0, 0], [2, 9, 10, 11]]
    assert batch.tgt_out.tolist() == [[8, 3, 0, 0], [9, 10, 11, 3]]
    assert batch.num_tgt_tokens == 6 and batch.indices.tolist() == [4, 2]
