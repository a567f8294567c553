"""Both directions' aligners of a text with their vocabularies (``AlignerPair``), pairs learned
apart and averaged (``AlignerEnsemble``), their alignment posteriors, and their file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from nmtkit.alignment.neural.model import AlignerConfig, DirectionalAligner, Spelling, with_null
from nmtkit.alignment.neural.vocab import WordVocab
from nmtkit.checkpoint import load_checked, save_checked
from nmtkit.data.batching import batch_by_tokens, pad
from nmtkit.errors import CheckpointError, ConfigError, DataError

Sentence = Sequence[str]
Pair = tuple[Sentence, Sentence]
Posteriors = tuple[np.ndarray, np.ndarray]
"""p(a_j = i) of the forward model, [J, I + 1], and p(a_i = j) of the reverse one, [I, J + 1];
column 0 is NULL."""


class AlignerPair:
    """The forward (source->target) and reverse aligners with their vocabularies."""

    def __init__(
        self,
        config: AlignerConfig,
        src_vocab: WordVocab,
        tgt_vocab: WordVocab,
        spelling: Spelling | None = None,
    ) -> None:
        self.config = config
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.lowercase = True  # how the text was read; set by whoever learns the pair
        self.spelling = spelling if config.spelling else None
        flipped = None
        if self.spelling is not None:
            flipped = (self.spelling[1], self.spelling[0], self.spelling[2])
        self.forward = DirectionalAligner(config, src_vocab.words, tgt_vocab.words, self.spelling)
        self.reverse = DirectionalAligner(config, tgt_vocab.words, src_vocab.words, flipped)

    def parameters(self) -> list[nn.Parameter]:
        return [*self.forward.parameters(), *self.reverse.parameters()]

    def train(self, mode: bool = True) -> None:
        self.forward.train(mode)
        self.reverse.train(mode)

    @torch.no_grad()
    def posteriors(self, pairs: Sequence[Pair], *, max_tokens: int = 4000) -> list[Posteriors]:
        """Both directions' alignment posteriors for each pair, in order.

        Raises:
            DataError: a word outside the vocabularies (the aligner has not seen it).
        """
        self.train(False)
        encoded = [self._encode(pair, number) for number, pair in enumerate(pairs, 1)]
        result: list[Posteriors | None] = [None] * len(pairs)
        # a pair with an empty side has no links: every word it has goes to NULL (batching it
        # could leave a batch with no word on one side, which the models cannot score)
        for index, (src_ids, tgt_ids) in enumerate(encoded):
            if not src_ids or not tgt_ids:
                result[index] = (
                    np.pad(np.ones((len(tgt_ids), 1), np.float32), ((0, 0), (0, len(src_ids)))),
                    np.pad(np.ones((len(src_ids), 1), np.float32), ((0, 0), (0, len(tgt_ids)))),
                )
        scored = [index for index, item in enumerate(result) if item is None]
        batches = make_batches([encoded[index] for index in scored], max_tokens)
        for positions in batches:
            batch = [scored[k] for k in positions]
            src, tgt = to_tensors(encoded, batch)
            forward = self.forward(with_null(src), tgt, posteriors=True).posteriors
            reverse = self.reverse(with_null(tgt), src, posteriors=True).posteriors
            assert forward is not None and reverse is not None
            for row, index in enumerate(batch):
                src_len, tgt_len = len(encoded[index][0]), len(encoded[index][1])
                result[index] = (
                    forward[row, :tgt_len, : src_len + 1].numpy(),
                    reverse[row, :src_len, : tgt_len + 1].numpy(),
                )
        return [item for item in result if item is not None]

    def _encode(self, pair: Pair, number: int) -> tuple[list[int], list[int]]:
        src, tgt = pair
        try:
            return self.src_vocab.encode(src), self.tgt_vocab.encode(tgt)
        except KeyError as exc:
            raise DataError(
                f"pair {number}: the word {exc.args[0]!r} was not in the aligner's training text",
                hint="an aligner links the text it learned from: learn on this text too",
            ) from None

    def state(self) -> dict[str, Any]:
        """Everything :meth:`from_state` needs, as plain values and tensors."""
        return {
            "format": FORMAT,
            "config": self.config.to_dict(),
            "src_words": self.src_vocab.words,
            "tgt_words": self.tgt_vocab.words,
            "lowercase": self.lowercase,
            "spelling": None if self.spelling is None else [a.tolist() for a in self.spelling],
            "forward": self.forward.state_dict(),
            "reverse": self.reverse.state_dict(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> AlignerPair:
        spelling = state.get("spelling")
        pair = cls(
            AlignerConfig(**state["config"]),
            WordVocab(state["src_words"]),
            WordVocab(state["tgt_words"]),
            None
            if spelling is None
            else (
                np.asarray(spelling[0], dtype=np.int64),
                np.asarray(spelling[1], dtype=np.int64),
                np.asarray(spelling[2], dtype=np.float32),
            ),
        )
        pair.lowercase = bool(state.get("lowercase", True))
        pair.forward.load_state_dict(state["forward"])
        pair.reverse.load_state_dict(state["reverse"])
        return pair

    def save(self, path: str | Path) -> None:
        """Write the pair to one file, atomically."""
        _save(self.state(), path)

    @classmethod
    def load(cls, path: str | Path) -> AlignerPair:
        """Read a pair written by :meth:`save`.

        Raises:
            CheckpointError: the file is missing, unreadable or not a single aligner pair.
        """
        state = _load(path)
        if state.get("format") != FORMAT:
            raise CheckpointError("not a single aligner pair", where=str(path))
        return cls.from_state(state)


class AlignerEnsemble:
    """Aligner pairs learned apart (other seeds) on the same text, whose posteriors are
    averaged: each pair's mistakes are its own, the links they share stay."""

    def __init__(self, members: Sequence[AlignerPair]) -> None:
        if not members:
            raise ConfigError("an ensemble needs at least one aligner pair")
        words = {(tuple(m.src_vocab.words), tuple(m.tgt_vocab.words), m.lowercase) for m in members}
        if len(words) > 1:
            raise ConfigError("the aligners of an ensemble must have learned from one text")
        self.members = list(members)

    @property
    def lowercase(self) -> bool:
        return self.members[0].lowercase

    @lowercase.setter
    def lowercase(self, value: bool) -> None:
        for member in self.members:
            member.lowercase = value

    def posteriors(self, pairs: Sequence[Pair], *, max_tokens: int = 4000) -> list[Posteriors]:
        """The members' posteriors (:meth:`AlignerPair.posteriors`), averaged."""
        total = self.members[0].posteriors(pairs, max_tokens=max_tokens)
        for member in self.members[1:]:
            more = member.posteriors(pairs, max_tokens=max_tokens)
            total = [(f + g, r + s) for (f, r), (g, s) in zip(total, more, strict=True)]
        count = len(self.members)
        return [(f / count, r / count) for f, r in total]

    def save(self, path: str | Path) -> None:
        """Write every member to one file, atomically."""
        _save({"format": ENSEMBLE_FORMAT, "members": [m.state() for m in self.members]}, path)

    @classmethod
    def load(cls, path: str | Path) -> AlignerEnsemble:
        """Read an ensemble, or a single pair as an ensemble of one.

        Raises:
            CheckpointError: the file is missing, unreadable or not an aligner.
        """
        state = _load(path)
        if state.get("format") == FORMAT:
            return cls([AlignerPair.from_state(state)])
        return cls([AlignerPair.from_state(member) for member in state["members"]])


FORMAT = "nmtkit-aligner/1"
ENSEMBLE_FORMAT = "nmtkit-aligner-ensemble/1"


def _save(state: dict[str, Any], path: str | Path) -> None:
    save_checked(path, state)


def _load(path: str | Path) -> dict[str, Any]:
    if not Path(path).is_file():
        what = "is a folder, not an aligner file" if Path(path).is_dir() else "no such file"
        raise CheckpointError(f"cannot read the aligner: {what}", where=str(path))
    state = load_checked(path, what="nmtkit aligner file")
    if state.get("format") not in (FORMAT, ENSEMBLE_FORMAT):
        raise CheckpointError("not an nmtkit aligner file", where=str(path))
    return state


def make_batches(pairs: Sequence[tuple[list[int], list[int]]], max_tokens: int) -> list[np.ndarray]:
    """Indices of pairs of similar lengths (sorted by source, then target length), at most
    ``max_tokens`` padded words a side (:func:`nmtkit.data.batching.batch_by_tokens`)."""
    src_lengths = np.array([len(src) for src, _ in pairs], dtype=np.int64)
    tgt_lengths = np.array([len(tgt) for _, tgt in pairs], dtype=np.int64)
    # batch_by_tokens sorts by its second argument first: the target there is our source
    return batch_by_tokens(tgt_lengths, src_lengths, max_tokens=max_tokens)


def to_tensors(
    pairs: Sequence[tuple[list[int], list[int]]], batch: Sequence[int] | np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded source and target ids, [B, I] and [B, J] (PAD is the data's padding id)."""
    return pad([pairs[k][0] for k in batch]), pad([pairs[k][1] for k in batch])
