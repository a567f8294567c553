"""The target side's own vocabulary: a joint SentencePiece model trimmed to the pieces that the
training targets use (``preprocess --trim-target-vocab``, the default).

A joint model learned on both languages holds pieces that one side never writes: of 8,000 on
Multi30k en-de, the German side uses 5,469. The decoder's output layer, the widest product of a
training step and of every search step, needs a row only for the pieces its side can write, as
fairseq's separate dictionaries over joint BPE codes give it. The trimmed model is a
SentencePiece model in its own right, so everything that reads a target model (the data dir,
checkpoints, ``translate``, ``align``) needs nothing new:

- its pieces are reordered, the specials first (ids 0-3, unchanged), then the used pieces in
  their old order, then the rest; every piece keeps its score, so merges happen as before;
- the unused pieces stay, marked ``UNUSED``: SentencePiece's BPE still merges through them and
  splits a finished unused piece back into the pieces it was merged from, so a validation or
  test word made of a piece the targets never used comes out in used pieces, not as UNK;
- every single character is kept, used or not: splitting ends there, and SentencePiece writes an
  unused character as UNK (merging a run of them, and their word, into one);
- the trimmed vocabulary size is the number of ids before the unused block
  (:func:`emitted_size`), the size of the output layer.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import sentencepiece as spm

from nmtkit.errors import DataError

_NORMAL = 1  # sentencepiece_model.proto: ModelProto.SentencePiece.Type
_UNUSED = 5


def _model_proto() -> type:
    """SentencePiece's ModelProto message class (its generated module needs protobuf)."""
    try:
        from sentencepiece import sentencepiece_model_pb2
    except ImportError as exc:  # protobuf missing or too old for the generated module
        raise DataError(
            f"cannot edit a SentencePiece model: {exc}",
            hint="pip install protobuf, or preprocess with --keep-target-vocab",
        ) from None
    model_proto: type = sentencepiece_model_pb2.ModelProto  # type: ignore[attr-defined]
    return model_proto


def trim_vocabulary(spm_model: bytes, used: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Trim ``spm_model`` to the pieces marked in ``used``.

    Args:
        spm_model: a serialized SentencePiece model proto.
        used: bool [V], V the model's pieces: which ids the target side's training data holds.
            Pieces that are not normal ones (the specials) and single characters are kept
            whatever it says.

    Returns:
        The trimmed model proto, and ``new_ids`` int64 [V]: the trimmed model's id of each
        old id (used pieces land below :func:`emitted_size`, unused ones at or above it).

    Raises:
        DataError: ``spm_model`` is not a model proto, or ``used`` is not V long.
    """
    proto = _model_proto()()
    try:
        proto.ParseFromString(spm_model)
    except Exception:  # protobuf's DecodeError, and a RuntimeError in its upb build
        raise DataError("not a SentencePiece model") from None
    size = len(proto.pieces)
    if used.shape != (size,):
        raise DataError(f"{used.shape[0]} usage flags for a model of {size:,} pieces")
    types = np.array([piece.type for piece in proto.pieces])
    # Single characters stay whatever the targets used: they are where splitting an unused
    # piece ends (SentencePiece writes an unused character as UNK, merged with its neighbours).
    letters = np.array([len(piece.piece) == 1 for piece in proto.pieces])
    keep = used.astype(bool) | (types != _NORMAL) | letters
    order = np.concatenate([np.flatnonzero(keep), np.flatnonzero(~keep)])
    new_ids = np.empty(size, dtype=np.int64)
    new_ids[order] = np.arange(size)
    copies = []
    for old in order.tolist():
        copy = type(proto.pieces[old])()
        copy.CopyFrom(proto.pieces[old])
        if not keep[old]:
            copy.type = _UNUSED
        copies.append(copy)
    del proto.pieces[:]
    proto.pieces.extend(copies)
    return proto.SerializeToString(), new_ids


def emitted_size(processor: spm.SentencePieceProcessor) -> int:
    """The ids a model can write: all of them but a trailing block of ``UNUSED`` pieces (a
    model from :func:`trim_vocabulary`; an untrimmed model has none)."""
    size = int(processor.get_piece_size())
    while size > 0 and processor.is_unused(size - 1):
        size -= 1
    return size


def remap_ids(ids: np.ndarray, new_ids: np.ndarray) -> np.ndarray:
    """The ids of a trimmed model for ``ids`` of the model it was trimmed from."""
    return new_ids[ids].astype(ids.dtype, copy=False)


def used_ids(datasets: Iterable[np.ndarray], size: int) -> np.ndarray:
    """Whether each of ``size`` ids occurs in any of ``datasets`` (token arrays), bool [size]."""
    counts = np.zeros(size, dtype=np.int64)
    for tokens in datasets:
        for start in range(0, len(tokens), 1 << 22):
            counts += np.bincount(np.asarray(tokens[start : start + (1 << 22)]), minlength=size)[
                :size
            ]
    return counts > 0
