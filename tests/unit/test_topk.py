"""row_topk, the blockwise top-n of each row that beam search uses, equals Tensor.topk."""

from __future__ import annotations

import pytest
import torch

from nmtkit.search.topk import row_argmax, row_topk


@pytest.mark.parametrize("width", [8000, 8003, 700])  # whole blocks, a partial last block
@pytest.mark.parametrize("n", [1, 10])
def test_equals_topk_without_ties(width: int, n: int) -> None:
    scores = torch.randn(37, width, generator=torch.Generator().manual_seed(width + n))
    values, columns = row_topk(scores, n, block=16)
    expected = scores.topk(n, dim=-1)
    assert torch.equal(values, expected.values)
    assert torch.equal(columns, expected.indices)


def test_best_entries_crowded_into_one_block_are_all_found() -> None:
    scores = torch.randn(3, 1024).log_softmax(dim=-1)
    scores[:, 130:140] = torch.arange(10.0)  # the ten best share block 2 (of 16 wide)
    values, columns = row_topk(scores, 10, block=16)
    assert torch.equal(columns, torch.arange(139, 129, -1).expand(3, -1))
    assert torch.equal(values, scores.topk(10, dim=-1).values)


def test_ties_and_masked_rows_give_the_same_values_at_distinct_columns() -> None:
    scores = torch.randn(4, 2000).round()  # many ties
    scores[1] = float("-inf")
    scores[2, :] = float("-inf")
    scores[2, 777] = -3.0  # one word allowed, as when a word is forced
    values, columns = row_topk(scores, 10, block=64)
    assert torch.equal(values, scores.topk(10, dim=-1).values)
    assert torch.equal(scores.gather(1, columns), values)
    assert all(len(set(row.tolist())) == 10 for row in columns)
    assert columns[2, 0] == 777


def test_narrow_rows_fall_back_to_topk() -> None:
    scores = torch.randn(5, 30)
    values, columns = row_topk(scores, 10, block=64)
    assert torch.equal(columns, scores.topk(10, dim=-1).indices)
    assert values.shape == (5, 10)


@pytest.mark.parametrize("width", [8000, 8003, 100])
def test_row_argmax_is_argmax_ties_included(width: int) -> None:
    gen = torch.Generator().manual_seed(width)
    scores = torch.randint(0, 5, (50, width), generator=gen).float()  # ties everywhere
    scores[3] = float("-inf")
    scores[4, -1] = 9.0  # the maximum in the partial last block
    assert torch.equal(row_argmax(scores, block=64), scores.argmax(dim=-1))
