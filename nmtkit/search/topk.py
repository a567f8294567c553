"""The n largest entries of each row of a wide matrix, found through its blocks: exact, and
several times faster on a CPU than ``Tensor.topk`` over a vocabulary of thousands of words.

``topk`` along the last dimension of [rows, V] walks every entry with a per-row selection;
``amax`` over fixed blocks is a plain vectorized reduction. The n largest entries of a row lie
in the n blocks with the largest maxima (an entry outside them is beaten by those n maxima), so
a search over those blocks' n x block entries finds them.
"""

from __future__ import annotations

import torch
from torch import Tensor

BLOCK = 64  # entries per block: the fastest of 8, 16, 32 and 64 on [640, 8 000] rows here


def row_topk(scores: Tensor, n: int, *, block: int = BLOCK) -> tuple[Tensor, Tensor]:
    """The ``n`` largest entries of each row of ``scores`` [R, V], best first, and their
    columns: ([R, n], [R, n]), the values those of ``scores.topk(n, dim=-1)``. Among tied
    entries the columns chosen may differ from ``topk``'s, which leaves ties unordered too."""
    rows, width = scores.shape
    blocks = width // block
    if blocks < 4 * n:  # too narrow for the blocks to pay
        return scores.topk(n, dim=-1)
    body = scores[:, : blocks * block].reshape(rows, blocks, block)  # [R, blocks, block]
    best = body.amax(dim=-1).topk(n, dim=-1).indices  # [R, n] the blocks with the n best maxima
    offsets = torch.arange(block, device=scores.device)
    columns = (best[:, :, None] * block + offsets).view(rows, n * block)  # [R, n*block]
    if width > blocks * block:  # the last, partial block is always searched
        tail = torch.arange(blocks * block, width, device=scores.device)
        columns = torch.cat([columns, tail.expand(rows, -1)], dim=1)
    values, picked = scores.gather(1, columns).topk(n, dim=-1)  # [R, n]
    return values, columns.gather(1, picked)


def row_argmax(scores: Tensor, *, block: int = BLOCK) -> Tensor:
    """The column of each row's largest entry of ``scores`` [R, V]: [R], exactly
    ``scores.argmax(dim=-1)``, ties included (the first of them): the first block holding the
    row's maximum, then the first maximum in that block."""
    rows, width = scores.shape
    blocks = width // block
    if blocks < 4:
        return scores.argmax(dim=-1)
    body = scores[:, : blocks * block].reshape(rows, blocks, block)  # [R, blocks, block]
    best = body.amax(dim=-1).argmax(dim=-1)  # [R] the first block with the row's maximum
    inside = body[torch.arange(rows, device=scores.device), best].argmax(dim=-1)  # [R]
    columns = best * block + inside
    if width > blocks * block:  # a later, partial block wins only with a larger entry
        tail_value, tail_column = scores[:, blocks * block :].max(dim=-1)
        better = tail_value > scores.gather(1, columns[:, None]).squeeze(1)
        columns = torch.where(better, tail_column + blocks * block, columns)
    return columns
