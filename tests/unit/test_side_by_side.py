"""Batches searched side by side (``translate --workers``): the same hypotheses as one at a
time, every item once, errors and the thread count handled."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from nmtkit.registry import Hypothesis
from nmtkit.search import BeamSearch, GreedySearch
from nmtkit.search.decode import decode_sequences
from nmtkit.search.side_by_side import (
    DEFAULT_WORKERS,
    default_workers,
    run_side_by_side,
    threads_per_worker,
)
from tests.unit.test_models import random_ids, tiny_model


def _decode(strategy, workers: int, precision: str = "fp32"):
    model = tiny_model("model.init_scale=1.0")  # peaked distributions: distinct hypotheses
    sequences = random_ids([3, 9, 5, 12, 7, 4, 11, 6, 8, 10, 2, 13], seed=3)
    found = decode_sequences(
        model,
        sequences,
        strategy,
        batch_size=3,  # four batches, so two workers share them
        max_len_a=1.5,
        max_len_b=4,
        precision=precision,
        workers=workers,
    )
    return [[(h.tokens, round(float(h.score), 5)) for h in hyps] for hyps in found]


@pytest.mark.parametrize(
    "strategy",
    [GreedySearch(GreedySearch.Config()), BeamSearch(BeamSearch.Config(beam_size=3))],
    ids=["greedy", "beam3"],
)
def test_two_workers_find_what_one_finds_in_input_order(strategy) -> None:
    alone = _decode(strategy, workers=1)
    assert _decode(strategy, workers=2) == alone
    assert _decode(strategy, workers=5) == alone  # more workers than batches
    assert len({tuple(hyps[0][0]) for hyps in alone}) > 1  # not one answer for every input


def test_workers_run_under_inference_mode_and_autocast_of_their_own() -> None:
    """Both are thread-local: a worker that did not enter them would build autograd graphs
    and multiply in fp32; the bf16 search must give what the bf16 search in one thread gives."""
    strategy = GreedySearch(GreedySearch.Config())
    assert _decode(strategy, workers=2, precision="bf16") == _decode(
        strategy, workers=1, precision="bf16"
    )


def test_every_item_once_on_several_threads_and_the_thread_count_restored() -> None:
    before = torch.get_num_threads()
    seen: list[int] = []
    threads: set[int] = set()
    counts: set[int] = set()
    gate = threading.Barrier(2, timeout=10)  # two items at once: on two threads

    def work(item: int) -> None:
        if item < 2:
            gate.wait()
        seen.append(item)
        threads.add(threading.get_ident())
        counts.add(torch.get_num_threads())

    run_side_by_side(list(range(8)), work, workers=2)
    assert sorted(seen) == list(range(8))
    assert len(threads) == 2 and threading.get_ident() not in threads
    assert counts == {threads_per_worker(2)}
    assert torch.get_num_threads() == before


def test_one_worker_runs_in_the_calling_thread() -> None:
    threads: set[int] = set()
    run_side_by_side([1, 2, 3], lambda item: threads.add(threading.get_ident()), workers=1)
    assert threads == {threading.get_ident()}


def test_a_worker_error_reaches_the_caller_and_stops_what_has_not_started() -> None:
    started: list[int] = []

    def work(item: int) -> None:
        started.append(item)
        if item == 0:
            raise ValueError("bad batch")
        time.sleep(0.01)

    with pytest.raises(ValueError, match="bad batch"):
        run_side_by_side(list(range(200)), work, workers=2)
    assert len(started) < 200


def test_the_default_is_two_workers_on_a_cpu_with_threads_for_them() -> None:
    threads = torch.get_num_threads()
    assert default_workers(torch.device("cpu")) == min(DEFAULT_WORKERS, threads)
    try:
        torch.set_num_threads(1)
        assert default_workers(torch.device("cpu")) == 1
        torch.set_num_threads(4)
        assert default_workers(torch.device("cpu")) == DEFAULT_WORKERS == 2
    finally:
        torch.set_num_threads(threads)
    assert default_workers(torch.device("cuda")) == 1


class _ThreadSpy:
    """A search that records, for each batch, its source shape and the thread that searched
    it, and finds one empty hypothesis per sentence."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[int, int], int]] = []

    def search(self, model, src, lengths, **_: object):
        self.calls.append((tuple(src.shape), threading.get_ident()))
        time.sleep(0.01)  # long enough for the other worker to take a batch
        return [[Hypothesis(tokens=[], score=0.0, log_prob=0.0)] for _ in range(src.size(0))]


def test_a_sentence_over_the_token_budget_is_searched_alone_in_the_calling_thread() -> None:
    spy = _ThreadSpy()
    sequences = random_ids([40, 3, 4, 5, 3, 50, 4, 6, 5])
    found = decode_sequences(
        tiny_model(),
        sequences,
        spy,
        batch_size=2,
        max_tokens=20,
        max_len_a=0.0,
        max_len_b=3,
        workers=2,
    )
    assert all(len(hyps) == 1 for hyps in found)
    here = threading.get_ident()
    long_calls = [(shape, thread) for shape, thread in spy.calls if shape[1] > 20]
    short_calls = [(shape, thread) for shape, thread in spy.calls if shape[1] <= 20]
    assert sorted(shape for shape, _ in long_calls) == [(1, 41), (1, 51)]
    assert {thread for _, thread in long_calls} == {here}
    assert here not in {thread for _, thread in short_calls}
    assert spy.calls[-2:] == long_calls  # after the rest, one at a time
