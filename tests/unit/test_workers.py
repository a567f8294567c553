"""Tests for nmtkit.data.workers in this process (tests/integration/test_preprocess_workers.py
runs real worker processes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm

from nmtkit.data.dedup import pair_digests
from nmtkit.data.text import CleanSettings, TextSettings, train_sentencepiece
from nmtkit.data.workers import ChunkPool, chunked, encode_lines, prepare_pairs, resolve_workers
from nmtkit.errors import ConfigError


def test_resolve_workers_reads_0_as_every_usable_core() -> None:
    assert resolve_workers(3) == 3
    assert resolve_workers(0) == len(os.sched_getaffinity(0))
    with pytest.raises(ConfigError) as error:
        resolve_workers(-1)
    assert error.value.where == "workers"


def test_chunked_cuts_the_last_chunk_short() -> None:
    assert [len(c) for c in chunked(range(25), 10)] == [10, 10, 5]
    assert list(chunked([], 10)) == []


def test_one_worker_maps_lazily_in_this_process() -> None:
    pulled: list[int] = []

    def numbers() -> Iterator[int]:
        for number in range(100):
            pulled.append(number)
            yield number

    with ChunkPool(1) as pool:
        results = pool.map(sum, chunked(numbers(), 10))
        assert next(results) == 45 and len(pulled) == 10
        assert len(list(results)) == 9


def test_prepare_pairs_counts_dropped_pairs_and_digests_the_kept() -> None:
    pairs = [("Hello  “world”", "Hallo Welt"), (None, "x"), ("", "leer"), ("a", "b")]
    chunk = prepare_pairs(pairs, text=TextSettings(), langs=("en", "de"), clean=CleanSettings())
    assert chunk.num_pairs == 4
    assert chunk.counts == {"invalid_utf8": 1, "empty": 1}
    assert chunk.src == ['Hello "world"', "a"] and chunk.tgt == ["Hallo Welt", "b"]
    assert np.array_equal(chunk.digests, pair_digests(chunk.src, chunk.tgt))


def test_encode_lines_flattens_what_sentencepiece_encodes(tmp_path: Path) -> None:
    lines = ["a small dog", "runs", ""]
    model = train_sentencepiece(lines * 20, model_type="bpe", vocab_size=20)
    path = tmp_path / "spm.model"
    path.write_bytes(model)
    ids, lengths = encode_lines(lines, model_path=str(path), stamp=1)
    expected = spm.SentencePieceProcessor(model_proto=model).encode(lines)
    assert lengths.tolist() == [len(e) for e in expected]
    assert ids.tolist() == [i for e in expected for i in e]
