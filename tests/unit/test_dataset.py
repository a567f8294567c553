"""Tests for nmtkit.data.dataset: binarized datasets written and read back through memmaps."""

from __future__ import annotations

import pickle
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmtkit.data.dataset import (
    TokenDataset,
    bin_path,
    count_id,
    dataset_info,
    idx_path,
    read_chunks,
    read_lengths,
    write_chunks,
    write_dataset,
)
from nmtkit.data.text import UNK_ID
from nmtkit.errors import DataError

_sequences = st.lists(st.lists(st.integers(0, 70_000), max_size=20), max_size=30)


@settings(max_examples=25)
@given(_sequences)
def test_dataset_written_and_read_back_is_unchanged(sequences: list[list[int]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        prefix = Path(folder) / "train.de"
        assert write_dataset(prefix, sequences) == len(sequences)
        dataset = TokenDataset(prefix)
        assert len(dataset) == len(sequences)
        assert [dataset[i].tolist() for i in range(len(dataset))] == sequences
        assert dataset.lengths.tolist() == [len(s) for s in sequences]
        assert dataset.lengths.dtype == np.int64
        largest = max((max(s) for s in sequences if s), default=0)
        assert dataset.dtype == (np.uint16 if largest < 65535 else np.int32)


@pytest.mark.parametrize(
    ("largest", "dtype"),
    [(0, np.uint16), (65534, np.uint16), (65535, np.int32), (2**31 - 1, np.int32)],
)
def test_dataset_uses_uint16_only_while_ids_fit(tmp_path: Path, largest: int, dtype: type) -> None:
    write_dataset(tmp_path / "d", [[1, largest], [2]])
    dataset = TokenDataset(tmp_path / "d")
    assert dataset.dtype == dtype
    assert dataset[0].tolist() == [1, largest]


def test_items_are_int64_copies_and_support_negative_indices(tmp_path: Path) -> None:
    write_dataset(tmp_path / "d", [[5, 6, 7], [8]])
    dataset = TokenDataset(tmp_path / "d")
    item = dataset[-2]
    assert item.dtype == np.int64 and item.tolist() == [5, 6, 7]
    item[0] = 99
    assert dataset[0].tolist() == [5, 6, 7]
    with pytest.raises(IndexError):
        dataset[2]


def test_dataset_files_are_npy_readable_by_numpy_memmap(tmp_path: Path) -> None:
    write_dataset(tmp_path / "d", [[4, 5], [], [6]])
    tokens = np.load(bin_path(tmp_path / "d"), mmap_mode="r")
    offsets = np.load(idx_path(tmp_path / "d"), mmap_mode="r")
    assert isinstance(tokens, np.memmap)
    assert tokens.tolist() == [4, 5, 6] and offsets.tolist() == [0, 2, 2, 3]


def test_reading_stays_in_constant_memory(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    sentences = [rng.integers(0, 8000, size=20_000) for _ in range(100)]  # 2M tokens, 4 MB
    write_dataset(tmp_path / "big", sentences)
    tracemalloc.start()
    dataset = TokenDataset(tmp_path / "big")
    first, last = dataset[0], dataset[99]
    total = dataset.num_tokens
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert total == 2_000_000
    assert first.tolist() == sentences[0].tolist() and last.tolist() == sentences[99].tolist()
    assert peak < 1_000_000  # two sentences are 320 kB as int64; the tokens are 4 MB


def test_write_streams_in_constant_memory(tmp_path: Path) -> None:
    def sentences() -> Iterator[np.ndarray]:
        for _ in range(200):
            yield np.arange(10_000) % 30_000  # 2M tokens in all, 16 MB as int64

    tracemalloc.start()
    write_dataset(tmp_path / "big", sentences())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10_000_000


def test_dataset_reopens_its_memmap_after_pickling(tmp_path: Path) -> None:
    write_dataset(tmp_path / "d", [[1, 2], [3]])
    copy = pickle.loads(pickle.dumps(TokenDataset(tmp_path / "d")))
    assert copy[1].tolist() == [3]
    assert len(pickle.dumps(TokenDataset(tmp_path / "d"))) < 500


def test_empty_dataset_and_empty_sentences_round_trip(tmp_path: Path) -> None:
    assert write_dataset(tmp_path / "none", []) == 0
    assert len(TokenDataset(tmp_path / "none")) == 0
    write_dataset(tmp_path / "blank", [[], []])
    assert TokenDataset(tmp_path / "blank").lengths.tolist() == [0, 0]


def test_failed_write_leaves_no_files(tmp_path: Path) -> None:
    def broken() -> Iterator[list[int]]:
        yield [1, 2]
        raise RuntimeError("encoder crashed")

    with pytest.raises(RuntimeError):
        write_dataset(tmp_path / "d", broken())
    assert list(tmp_path.iterdir()) == []


def test_negative_ids_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="out of range"):
        write_dataset(tmp_path / "d", [[1], [-1]])
    assert list(tmp_path.iterdir()) == []


def test_missing_dataset_raises_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="run nmtkit preprocess"):
        TokenDataset(tmp_path / "absent")


def test_truncated_token_file_raises_data_error(tmp_path: Path) -> None:
    write_dataset(tmp_path / "d", [[1, 2, 3], [4, 5]])
    data = bin_path(tmp_path / "d").read_bytes()
    bin_path(tmp_path / "d").write_bytes(data[:-4])
    with pytest.raises(DataError, match="corrupt"):
        TokenDataset(tmp_path / "d")


def test_offsets_that_do_not_match_tokens_raise_data_error(tmp_path: Path) -> None:
    write_dataset(tmp_path / "d", [[1, 2, 3], [4, 5]])
    with open(idx_path(tmp_path / "d"), "wb") as stream:
        np.save(stream, np.array([0, 3, 9], dtype=np.int64))
    with pytest.raises(DataError, match="offsets do not match"):
        TokenDataset(tmp_path / "d")
    idx_path(tmp_path / "d").write_bytes(b"garbage")
    with pytest.raises(DataError, match="corrupt"):
        TokenDataset(tmp_path / "d")


@settings(max_examples=25)
@given(_sequences, st.data())
def test_chunks_gathered_and_written_equal_the_sequences_written_one_by_one(
    sequences: list[list[int]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        whole, part, copy = (Path(folder) / name for name in ("whole", "part", "copy"))
        write_dataset(whole, sequences)
        dataset = TokenDataset(whole)
        indices = data.draw(st.lists(st.integers(0, max(len(sequences) - 1, 0)), max_size=20))
        indices = sorted(indices) if sequences else []
        write_dataset(part, [sequences[i] for i in indices])
        cut = len(indices) // 2
        write_chunks(
            copy,
            [dataset.gather(np.array(c, dtype=np.int64)) for c in (indices[:cut], indices[cut:])],
        )
        for path in (bin_path, idx_path):
            assert path(copy).read_bytes() == path(part).read_bytes()


def test_an_id_out_of_range_names_its_sequence_across_chunks(tmp_path: Path) -> None:
    chunks = [(np.array([1, 2, 3]), np.array([2, 1])), (np.array([4, -5]), np.array([1, 1]))]
    with pytest.raises(DataError, match="in sequence 3$"):
        write_chunks(tmp_path / "d", chunks)
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=25)
@given(_sequences, st.integers(1, 4))
def test_reading_in_chunks_gives_what_the_memory_map_gives(
    sequences: list[list[int]], chunk: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        prefix = Path(folder) / "d"
        write_dataset(prefix, [*sequences, [UNK_ID, 5, UNK_ID]])
        dataset = TokenDataset(prefix)
        lengths = list(read_lengths(prefix, chunk=chunk))
        assert all(0 < part.size <= chunk for part in lengths)
        assert np.concatenate(lengths).tolist() == dataset.lengths.tolist()
        read = [
            ids[start - size : start].tolist()
            for ids, sizes in read_chunks(prefix, lengths)
            for start, size in zip(np.cumsum(sizes), sizes, strict=True)
        ]
        assert read == [dataset[i].tolist() for i in range(len(dataset))]
        assert count_id(prefix, UNK_ID) == dataset.count(UNK_ID)
        info = dataset_info(prefix)
        assert (info.num_sentences, info.num_tokens) == (len(dataset), dataset.num_tokens)
        assert info.dtype == dataset.dtype


def test_offsets_file_is_the_one_np_save_writes(tmp_path: Path) -> None:
    write_dataset(tmp_path / "d", [[4, 5], [], [6]])
    with open(tmp_path / "saved.npy", "wb") as stream:
        np.save(stream, np.array([0, 2, 2, 3], dtype=np.int64))
    assert idx_path(tmp_path / "d").read_bytes() == (tmp_path / "saved.npy").read_bytes()


def test_offsets_stream_to_disk_while_writing(tmp_path: Path) -> None:
    chunks = ((np.ones(10_000), np.ones(10_000)) for _ in range(200))  # 2M one-token sentences
    tracemalloc.start()
    write_chunks(tmp_path / "d", chunks)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(TokenDataset(tmp_path / "d")) == 2_000_000
    assert peak < 5_000_000  # the offsets alone are 16 MB
