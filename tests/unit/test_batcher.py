"""The dynamic batcher without HTTP or a model: batches by key and size, order, the queue
bound, draining at close, errors and cancelled callers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmtkit.serving.batcher import Batcher, BatcherClosed, QueueFull

TIMEOUT = 10  # seconds any wait may take before the test fails instead of hanging


class Recorder:
    """A decode function that records its batches and answers ``key:sentence``."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, list[str]]] = []
        self.lock = threading.Lock()

    def __call__(self, key: str, sentences: list[str]) -> list[str]:
        with self.lock:
            self.batches.append((key, list(sentences)))
        return [f"{key}:{sentence}" for sentence in sentences]


def make(
    decode: Recorder, *, wait_s: float = 30.0, max_batch: int = 100, max_queue: int = 1000
) -> Batcher[str, str, str]:
    return Batcher(decode, wait_s=wait_s, max_batch_sentences=max_batch, max_queue=max_queue)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def closing() -> Iterator[list[Batcher[str, str, str]]]:
    """Batchers appended here are closed and joined after the test, whatever happens."""
    made: list[Batcher[str, str, str]] = []
    yield made
    for batcher in made:
        batcher.close()
        assert batcher.join(TIMEOUT)


def test_requests_waiting_together_are_decoded_as_one_batch_in_order(
    recorder: Recorder, closing: list[Batcher[str, str, str]]
) -> None:
    batcher = make(recorder, wait_s=3600, max_batch=6)  # decoded when the sixth comes
    closing.append(batcher)
    batcher.start()
    futures = [batcher.submit("k", [f"{i}a", f"{i}b"]) for i in range(3)]
    answers = [future.result(TIMEOUT) for future in futures]
    assert answers == [[f"k:{i}a", f"k:{i}b"] for i in range(3)]
    assert recorder.batches == [("k", ["0a", "0b", "1a", "1b", "2a", "2b"])]
    assert batcher.stats().batches == 1 and batcher.stats().sentences == 6


def test_a_full_batch_is_decoded_without_waiting(
    recorder: Recorder, closing: list[Batcher[str, str, str]]
) -> None:
    batcher = make(recorder, wait_s=3600, max_batch=3)
    closing.append(batcher)
    batcher.start()
    first = batcher.submit("k", ["a", "b"])
    second = batcher.submit("k", ["c"])
    assert first.result(TIMEOUT) == ["k:a", "k:b"] and second.result(TIMEOUT) == ["k:c"]


def test_requests_with_different_keys_never_share_a_batch(recorder: Recorder) -> None:
    batcher = make(recorder)
    futures = [batcher.submit(key, [key + "1"]) for key in ("x", "y", "x", "y", "x")]
    batcher.close()  # a closing batcher decodes what is queued at once
    batcher.start()
    assert batcher.join(TIMEOUT)
    assert [future.result(0) for future in futures] == [["x:x1"], ["y:y1"]] * 2 + [["x:x1"]]
    assert recorder.batches == [("x", ["x1", "x1", "x1"]), ("y", ["y1", "y1"])]


@settings(max_examples=40)
@given(
    requests=st.lists(
        st.tuples(st.sampled_from("pq"), st.integers(min_value=1, max_value=6)), max_size=12
    ),
    max_batch=st.integers(min_value=1, max_value=8),
)
def test_every_sentence_is_answered_once_within_the_batch_size(
    requests: list[tuple[str, int]], max_batch: int
) -> None:
    recorder = Recorder()
    batcher = make(recorder, max_batch=max_batch)
    futures = []
    for number, (key, size) in enumerate(requests):
        futures.append(batcher.submit(key, [f"{number}.{i}" for i in range(size)]))
    batcher.close()
    batcher.start()
    assert batcher.join(TIMEOUT)
    for number, ((key, size), future) in enumerate(zip(requests, futures, strict=True)):
        assert future.result(0) == [f"{key}:{number}.{i}" for i in range(size)]
    for key, sentences in recorder.batches:
        owners = {sentence.split(".")[0] for sentence in sentences}
        # whole requests of one key; over the size only as a request of its own
        assert all(requests[int(owner)][0] == key for owner in owners)
        assert len(sentences) <= max_batch or len(owners) == 1
    assert sum(len(s) for _, s in recorder.batches) == sum(size for _, size in requests)
    assert batcher.stats().queued == 0


def test_a_request_over_the_queue_bound_is_refused_until_the_queue_empties(
    recorder: Recorder, closing: list[Batcher[str, str, str]]
) -> None:
    batcher = make(recorder, max_queue=3)
    closing.append(batcher)
    queued = batcher.submit("k", ["a", "b"])
    with pytest.raises(QueueFull, match="2 sentences are queued and 2 more"):
        batcher.submit("k", ["c", "d"])
    assert batcher.stats().queued == 2
    third = batcher.submit("k", ["c"])  # exactly at the bound
    batcher.close()
    batcher.start()
    assert queued.result(TIMEOUT) == ["k:a", "k:b"] and third.result(TIMEOUT) == ["k:c"]
    assert batcher.stats().queued == 0


def test_close_answers_what_is_queued_and_refuses_new_requests(recorder: Recorder) -> None:
    batcher = make(recorder, wait_s=3600)
    batcher.start()
    waiting = batcher.submit("k", ["a"])
    batcher.close()
    with pytest.raises(BatcherClosed):
        batcher.submit("k", ["b"])
    assert batcher.join(TIMEOUT)
    assert waiting.result(0) == ["k:a"]


def test_a_failed_request_fails_alone_and_its_batch_mates_get_answers(
    closing: list[Batcher[str, str, str]],
) -> None:
    def decode(key: str, sentences: list[str]) -> list[str]:
        if "bad" in sentences:
            raise RuntimeError("model on fire")
        return [s.upper() for s in sentences]

    batcher: Batcher[str, str, str] = Batcher(
        decode, wait_s=3600, max_batch_sentences=4, max_queue=8
    )
    closing.append(batcher)
    batcher.start()
    first = batcher.submit("k", ["a"])
    broken = batcher.submit("k", ["x", "bad"])
    last = batcher.submit("k", ["b"])  # the fourth sentence: the batch is due
    with pytest.raises(RuntimeError, match="model on fire"):
        broken.result(TIMEOUT)
    assert first.result(TIMEOUT) == ["A"] and last.result(TIMEOUT) == ["B"]
    assert batcher.submit("k", ["c"] * 4).result(TIMEOUT) == ["C"] * 4  # the worker goes on
    assert batcher.stats().queued == 0


def test_a_decoder_that_loses_a_result_is_an_error_not_a_shifted_answer(
    closing: list[Batcher[str, str, str]],
) -> None:
    batcher: Batcher[str, str, str] = Batcher(
        lambda key, sentences: sentences[1:], wait_s=0, max_batch_sentences=8, max_queue=8
    )
    closing.append(batcher)
    batcher.start()
    with pytest.raises(RuntimeError, match="1 results for 2 inputs"):
        batcher.submit("k", ["a", "b"]).result(TIMEOUT)


def test_a_cancelled_request_is_skipped_and_leaves_the_queue(recorder: Recorder) -> None:
    batcher = make(recorder)
    gone = batcher.submit("k", ["a"])
    kept = batcher.submit("k", ["b"])
    assert gone.cancel()
    batcher.close()
    batcher.start()
    assert batcher.join(TIMEOUT)
    assert kept.result(0) == ["k:b"] and recorder.batches == [("k", ["b"])]
    assert batcher.stats().queued == 0


def test_an_empty_request_is_answered_at_once_without_the_worker(recorder: Recorder) -> None:
    batcher = make(recorder)
    future: Future[list[str]] = batcher.submit("k", [])
    assert future.result(0) == [] and recorder.batches == []


def test_close_dropping_the_queue_cancels_what_waits(recorder: Recorder) -> None:
    batcher = make(recorder, wait_s=3600)
    batcher.start()
    waiting = batcher.submit("k", ["a", "b"])
    batcher.close(drop_queued=True)
    assert batcher.join(TIMEOUT)
    assert waiting.cancelled() and recorder.batches == [] and batcher.stats().queued == 0
