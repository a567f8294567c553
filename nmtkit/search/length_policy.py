"""The one rule for long input of every command that runs a model over sentences (translate,
align, score-pairs, serve): a cap on the pieces read, and batches under a token budget."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nmtkit.data.batching import batch_by_tokens
from nmtkit.errors import ConfigError

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 8192  # padded pieces a decoding batch may hold (sentences x (longest + 1))


@dataclass(frozen=True, kw_only=True, slots=True)
class LengthPolicy:
    """How translate and align (and anything else that runs a model over sentences) treat long
    input: one rule, kept here.

    A sentence is read whole, however much longer than the training sentences: no encoder has a
    position limit, and nothing is cut unless the user asks for ``max_source_len`` (then a
    longer sentence is cut to that many pieces, with a warning naming it: :meth:`cut`).
    Sentences are batched by length so that
    *sentences × (longest + 1)* stays within ``max_tokens`` (:meth:`batches`): a batch of long
    sentences holds fewer of them, and a sentence longer than the budget is decoded alone, so
    memory grows with one sentence's length, not with the batch size times the longest.

    Attributes:
        max_source_len: the most pieces of a sentence (EOS not counted) the model reads;
            0 (the default) for no cap.
        max_tokens: the budget of a batch in padded pieces, EOS included (a beam search holds
            beam-size times as many).

    Raises:
        ConfigError: ``max_source_len`` below 0 or ``max_tokens`` below 1.
    """

    max_source_len: int = 0
    max_tokens: int = DEFAULT_MAX_TOKENS

    def __post_init__(self) -> None:
        if self.max_source_len < 0:
            raise ConfigError(
                f"--max-source-len must be 0 (no cap) or more, got {self.max_source_len}"
            )
        if self.max_tokens < 1:
            raise ConfigError(f"--max-tokens must be at least 1, got {self.max_tokens}")

    @classmethod
    def of(
        cls, *, max_source_len: int | None = None, max_tokens: int | None = None
    ) -> LengthPolicy:
        """The policy with the bounds given, and the defaults for those that are None."""
        given = {"max_source_len": max_source_len, "max_tokens": max_tokens}
        return cls(**{key: value for key, value in given.items() if value is not None})

    def cut(self, ids: Sequence[int], *, what: str) -> list[int]:
        """Return ``ids`` whole, or its first ``max_source_len`` with a warning naming ``what``
        (e.g. "input line 12")."""
        cap = self.max_source_len
        if not cap or len(ids) <= cap:
            return list(ids)
        log.warning(
            "%s has %d pieces, over --max-source-len %d: reading only the first %d",
            what,
            len(ids),
            cap,
            cap,
        )
        return list(ids[:cap])

    def batches(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int] | None = None,
        *,
        max_sentences: int,
    ) -> list[list[int]]:
        """Indices of the sentences in batches, shortest first, each within ``max_tokens``
        (counting the longer side of a pair) and ``max_sentences``; a sentence over the
        budget is a batch of its own (:func:`nmtkit.data.batching.batch_by_tokens`)."""
        src = np.asarray(src_lengths, dtype=np.int64).reshape(-1)
        tgt = src if tgt_lengths is None else np.asarray(tgt_lengths, dtype=np.int64).reshape(-1)
        found = batch_by_tokens(src, tgt, max_tokens=self.max_tokens, max_sentences=max_sentences)
        return [batch.tolist() for batch in found]
