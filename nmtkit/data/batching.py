"""Token-budget batches over length-sorted sentences (optionally capped in sentences), a seeded
order per epoch, and collation."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.registry import Batch


def batch_by_tokens(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    *,
    max_tokens: int,
    max_sentences: int | None = None,
    rng: np.random.Generator | None = None,
) -> list[np.ndarray]:
    """Cut sentences into batches of similar length whose padded size stays within budget.

    Sentences are sorted by (target, source) length (ties broken by ``rng``) and cut greedily so
    that ``num_sentences * longest side`` (EOS included) never exceeds ``max_tokens`` and, when
    given, ``num_sentences`` never exceeds ``max_sentences``; a single sentence longer than the
    budget forms a batch of its own. With ``rng`` the batches are shuffled too.

    Returns:
        One array of sentence indices per batch.
    """
    num = len(src_lengths)
    tie_break = rng.permutation(num) if rng is not None else np.arange(num)
    longest = np.maximum(src_lengths, tgt_lengths) + 1  # + EOS
    order = tie_break[np.lexsort((src_lengths[tie_break], tgt_lengths[tie_break]))]
    batches: list[np.ndarray] = []
    start, widest = 0, 0
    cap = num if max_sentences is None else max_sentences
    for pos, index in enumerate(order):
        width = max(widest, int(longest[index]))
        count = pos - start + 1  # sentences in the batch if this one joins
        if pos > start and (width * count > max_tokens or count > cap):
            batches.append(order[start:pos])
            start, width = pos, int(longest[index])
        widest = width
    if start < num:
        batches.append(order[start:])
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def epoch_batches(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    *,
    max_tokens: int,
    max_sentences: int | None = None,
    seed: int,
    epoch: int,
) -> list[np.ndarray]:
    """The batches of one training epoch, a pure function of (seed, epoch)."""
    rng = np.random.default_rng([seed, epoch])
    return batch_by_tokens(
        src_lengths, tgt_lengths, max_tokens=max_tokens, max_sentences=max_sentences, rng=rng
    )


def pad(
    sequences: Sequence[Sequence[int] | np.ndarray],
    *,
    prefix: int | None = None,
    suffix: int | None = None,
) -> torch.Tensor:
    """Right-pad id sequences into a [B, L] tensor, optionally adding a first and last id."""
    extra = (prefix is not None) + (suffix is not None)
    width = max(len(s) for s in sequences) + extra
    out = torch.full((len(sequences), width), PAD_ID, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids = (
            ([prefix] if prefix is not None else [])
            + list(seq)
            + ([suffix] if suffix is not None else [])
        )
        out[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
    return out


def collate(
    src: Sequence[Sequence[int] | np.ndarray],
    tgt: Sequence[Sequence[int] | np.ndarray],
    indices: Sequence[int],
) -> Batch:
    """Pad one batch: sources gain EOS, targets become BOS + y (input) and y + EOS (output)."""
    tgt_out = pad(tgt, suffix=EOS_ID)  # [B, T]
    return Batch(
        src=pad(src, suffix=EOS_ID),  # [B, S]
        src_lengths=torch.as_tensor([len(s) + 1 for s in src], dtype=torch.long),
        tgt_in=pad(tgt, prefix=BOS_ID),  # [B, T]
        tgt_out=tgt_out,
        indices=torch.as_tensor(indices, dtype=torch.long),
        num_tgt_tokens=sum(len(t) + 1 for t in tgt),
    )


def collate_source(src: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad sources for translation: ids + EOS [B, S] and lengths [B]."""
    lengths = torch.as_tensor([len(s) + 1 for s in src], dtype=torch.long)
    return pad(src, suffix=EOS_ID), lengths
