"""Binarized token datasets read through numpy memmaps (fairseq ``MMapIndexedDataset`` style).

A dataset with prefix ``P`` is two ``.npy`` files, both opened with ``np.load(mmap_mode="r")``:

- ``P.bin``: every sentence's token ids back to back, 1-D, ``uint16`` when the largest id is
  below 65535, else ``int32`` (the ``.npy`` header records which).
- ``P.idx``: ``int64`` offsets into ``P.bin``, length n + 1; sentence i is
  ``bin[idx[i]:idx[i + 1]]``. Sentences carry no EOS.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nmtkit.errors import DataError
from nmtkit.outputs import atomic_path

log = logging.getLogger(__name__)

_CHUNK = 1 << 18  # values copied or read per step (2 MB as int64)
_GROUP_TOKENS = 1 << 16  # tokens (or sequences, _GROUP_SEQUENCES) that write_dataset gathers
_GROUP_SEQUENCES = 4096  # into one chunk: per-chunk work is vectorized, per-sequence work is not
_INT32_MAX = np.iinfo(np.int32).max
_SMALL_MAX = np.iinfo(np.uint16).max  # ids must stay below it to fit uint16
_DTYPES = (np.dtype(np.uint16), np.dtype(np.int32))
_OFFSETS = np.dtype(np.int64)


def bin_path(prefix: Path) -> Path:
    """Return the token file of the dataset at ``prefix``."""
    return prefix.with_name(prefix.name + ".bin")


def idx_path(prefix: Path) -> Path:
    """Return the offsets file of the dataset at ``prefix``."""
    return prefix.with_name(prefix.name + ".idx")


def write_dataset(prefix: Path, sequences: Iterable[Sequence[int] | np.ndarray]) -> int:
    """Write sequences of token ids as ``prefix.bin`` and ``prefix.idx``, each atomically.

    Tokens stream through an int32 scratch file, so memory holds only the offsets (8 bytes a
    sequence), never the tokens.

    Returns:
        The number of sequences written.

    Raises:
        DataError: an id is negative or does not fit int32.
    """
    return write_chunks(prefix, _grouped(sequences))


def write_chunks(prefix: Path, chunks: Iterable[tuple[np.ndarray, np.ndarray]]) -> int:
    """Write sequences given a chunk at a time, as ``write_dataset`` writes them one at a time.

    Tokens and offsets stream through scratch files, so memory holds one chunk, whatever the
    number of sequences.

    Args:
        chunks: for each chunk, its sequences' ids back to back [sum(lengths)] and the length
            of each sequence [n].

    Returns:
        The number of sequences written.

    Raises:
        DataError: an id is negative or does not fit int32.
    """
    prefix = Path(prefix)
    scratch = prefix.with_name(prefix.name + ".scratch")
    ends_scratch = prefix.with_name(prefix.name + ".ends.scratch")
    num_sequences = num_tokens = 0
    largest = -1
    try:
        with open(scratch, "wb") as stream, open(ends_scratch, "wb") as ends_stream:
            ends_stream.write(np.zeros(1, dtype=_OFFSETS).tobytes())  # offsets start at 0
            for chunk_ids, chunk_lengths in chunks:
                ids = np.asarray(chunk_ids).reshape(-1)
                lengths = np.asarray(chunk_lengths, dtype=np.int64)
                ends = np.cumsum(lengths)
                assert ends.size == 0 or ends[-1] == ids.size, "lengths do not add up to the ids"
                if ids.size:
                    if ids.min() < 0 or ids.max() > _INT32_MAX:
                        bad = np.flatnonzero((ids < 0) | (ids > _INT32_MAX))[0]
                        number = num_sequences + int(np.searchsorted(ends, bad, side="right"))
                        raise DataError(f"token id out of range in sequence {number}")
                    largest = max(largest, int(ids.max()))
                stream.write(ids.astype(np.int32).tobytes())
                ends_stream.write((num_tokens + ends).astype(np.int64).tobytes())
                num_sequences += lengths.size
                num_tokens += ids.size
        dtype = _DTYPES[0] if largest < _SMALL_MAX else _DTYPES[1]
        _convert_scratch(scratch, bin_path(prefix), np.dtype(np.int32), dtype, num_tokens)
        _convert_scratch(ends_scratch, idx_path(prefix), _OFFSETS, _OFFSETS, num_sequences + 1)
    finally:
        for path in (scratch, ends_scratch):
            if path.exists():
                path.unlink()
    log.debug("wrote %d sequences, %d tokens (%s) to %s", num_sequences, num_tokens, dtype, prefix)
    return num_sequences


def _grouped(
    sequences: Iterable[Sequence[int] | np.ndarray],
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Gather sequences into chunks of ids back to back and their lengths."""
    group: list[np.ndarray] = []
    num_tokens = 0
    for sequence in sequences:
        group.append(np.asarray(sequence, dtype=np.int64).reshape(-1))
        num_tokens += group[-1].size
        if len(group) >= _GROUP_SEQUENCES or num_tokens >= _GROUP_TOKENS:
            yield _joined(group)
            group, num_tokens = [], 0
    if group:
        yield _joined(group)


def _joined(group: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((ids.size for ids in group), dtype=np.int64, count=len(group))
    return np.concatenate(group), lengths


def _convert_scratch(
    scratch: Path, path: Path, scratch_dtype: np.dtype, dtype: np.dtype, size: int
) -> None:
    """Copy the ``size`` raw ``scratch_dtype`` values of ``scratch`` into a 1-D ``.npy`` of
    ``dtype``, chunk by chunk: the very file ``np.save`` writes.

    Written with plain writes, not through a writable memory map: on a full disk a write
    raises ENOSPC (a one-line error), where a store into a mapped page would kill the process
    with SIGBUS.
    """
    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
        "fortran_order": False,
        "shape": (size,),
    }
    with atomic_path(path) as tmp, open(tmp, "wb") as stream, open(scratch, "rb") as source:
        np.lib.format.write_array_header_1_0(stream, header)
        while (values := np.fromfile(source, dtype=scratch_dtype, count=_CHUNK)).size:
            values.astype(dtype, copy=False).tofile(stream)


def _read_header(path: Path) -> tuple[np.dtype, int, int]:
    """Return the dtype, length and data offset of the 1-D ``.npy`` file ``path``.

    Raises:
        DataError: the file is missing or not a 1-D ``.npy``.
    """
    if not path.is_file():
        raise DataError("no such dataset file", where=str(path), hint="run nmtkit preprocess")
    with open(path, "rb") as stream:
        try:
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
        except (ValueError, OSError, EOFError) as exc:
            raise DataError(f"corrupt dataset file: {exc}", where=str(path)) from None
        if len(shape) != 1:
            raise DataError(f"dataset file holds shape {shape}", where=str(path))
        return np.dtype(dtype), int(shape[0]), stream.tell()


def read_values(path: Path, *, chunk: int = _CHUNK) -> Iterator[np.ndarray]:
    """Yield the values of the 1-D ``.npy`` file ``path`` ``chunk`` at a time, with plain reads:
    unlike a memory map, whose pages stay resident in this process once read, the memory
    they take does not grow with the file."""
    dtype, size, start = _read_header(path)
    with open(path, "rb") as stream:
        stream.seek(start)
        for begin in range(0, size, chunk):
            yield np.fromfile(stream, dtype=dtype, count=min(chunk, size - begin))


def read_lengths(prefix: Path, *, chunk: int = _CHUNK) -> Iterator[np.ndarray]:
    """Yield the sentence lengths of the dataset at ``prefix``, int64, up to ``chunk`` at a
    time, in bounded memory (see :func:`read_values`)."""
    last = np.zeros(1, dtype=np.int64)
    first = True
    for offsets in read_values(idx_path(prefix), chunk=chunk):
        lengths = np.diff(offsets if first else np.concatenate([last, offsets]))
        first, last = False, offsets[-1:]
        if lengths.size:
            yield lengths.astype(np.int64)


def read_chunks(
    prefix: Path, lengths: Iterable[np.ndarray]
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield the sentences of the dataset at ``prefix`` in chunks of the given ``lengths``
    (its own, from :func:`read_lengths`), as ids back to back [sum(lengths)] and lengths, in
    bounded memory."""
    dtype, _, start = _read_header(bin_path(prefix))
    with open(bin_path(prefix), "rb") as stream:
        stream.seek(start)
        for chunk_lengths in lengths:
            ids = np.fromfile(stream, dtype=dtype, count=int(chunk_lengths.sum()))
            yield ids.astype(np.int64), chunk_lengths


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """What the headers of a dataset's files say: no token is read."""

    num_sentences: int
    num_tokens: int
    dtype: np.dtype


def dataset_info(prefix: Path) -> DatasetInfo:
    """Return the size and token dtype of the dataset at ``prefix`` from its file headers."""
    dtype, num_tokens, _ = _read_header(bin_path(prefix))
    _, num_offsets, _ = _read_header(idx_path(prefix))
    return DatasetInfo(num_sentences=num_offsets - 1, num_tokens=num_tokens, dtype=dtype)


def count_id(prefix: Path, token_id: int) -> int:
    """Return how often ``token_id`` occurs in the dataset at ``prefix``, reading it in bounded
    memory (see :func:`read_values`); ``TokenDataset.count`` reads through its memory map."""
    return sum(
        int(np.count_nonzero(tokens == token_id)) for tokens in read_values(bin_path(prefix))
    )


class TokenDataset:
    """Read a binarized dataset in constant memory: tokens stay on disk behind a memmap.

    Args:
        prefix: the dataset path without ``.bin``/``.idx``, e.g. ``data_dir / "train.de"``.

    Attributes:
        lengths: int64 token count of each sentence (no EOS), [n].

    Raises:
        DataError: the files are missing or inconsistent.
    """

    def __init__(self, prefix: Path) -> None:
        self.prefix = Path(prefix)
        self._tokens = _load_array(bin_path(self.prefix))
        self._offsets = _load_array(idx_path(self.prefix))
        self._check()
        self.lengths: np.ndarray = np.diff(self._offsets).astype(np.int64)

    def _check(self) -> None:
        where = str(self.prefix)
        if self._tokens.ndim != 1 or self._tokens.dtype not in _DTYPES:
            raise DataError(
                f"token file holds {self._tokens.dtype} {self._tokens.shape}", where=where
            )
        offsets = self._offsets
        if offsets.ndim != 1 or offsets.dtype != np.int64 or offsets.size == 0 or offsets[0] != 0:
            raise DataError("offsets file is not int64 offsets starting at 0", where=where)
        if offsets[-1] != self._tokens.size or np.any(np.diff(offsets) < 0):
            raise DataError(
                f"offsets do not match the {self._tokens.size} tokens",
                where=where,
                hint="rerun nmtkit preprocess",
            )

    def __reduce__(self) -> tuple[type, tuple[Path]]:
        # Pickle by path, so DataLoader workers reopen the memmap instead of copying the tokens.
        return (TokenDataset, (self.prefix,))

    @property
    def dtype(self) -> np.dtype:
        """The on-disk dtype of the tokens (uint16 or int32)."""
        return self._tokens.dtype

    @property
    def num_tokens(self) -> int:
        """Total number of tokens over all sentences."""
        return int(self._tokens.size)

    def __len__(self) -> int:
        return int(self._offsets.size - 1)

    def __getitem__(self, index: int) -> np.ndarray:
        """Return a copy of sentence ``index``'s ids as int64, [length]."""
        size = len(self)
        if not -size <= index < size:
            raise IndexError(f"sentence {index} out of range for {size} sentences")
        index %= size
        start, end = self._offsets[index], self._offsets[index + 1]
        return np.array(self._tokens[start:end], dtype=np.int64)

    def gather(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the sentences at ``indices`` (each in range) back to back, int64
        [sum(lengths)], and their lengths, int64 [n]: a chunk for :func:`write_chunks`."""
        indices = np.asarray(indices, dtype=np.int64)
        starts = self._offsets[indices]
        lengths = self._offsets[indices + 1] - starts
        # A token's position: its sentence's start plus its rank within the sentence.
        firsts = np.cumsum(lengths) - lengths
        positions = np.repeat(starts - firsts, lengths) + np.arange(int(lengths.sum()))
        return np.asarray(self._tokens[positions], dtype=np.int64), lengths

    def count(self, token_id: int) -> int:
        """Return how often ``token_id`` occurs in the whole dataset (e.g. UNK_ID)."""
        total = 0
        for start in range(0, self.num_tokens, _CHUNK):
            total += int(np.count_nonzero(self._tokens[start : start + _CHUNK] == token_id))
        return total


def _load_array(path: Path) -> np.ndarray:
    if not path.is_file():
        raise DataError("no such dataset file", where=str(path), hint="run nmtkit preprocess")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"corrupt dataset file: {exc}", where=str(path)) from None
