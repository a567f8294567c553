"""Word dropout: whole words dropped in training (Gal and Ghahramani, 2016; Sennrich and Zhang,
2019, for low-resource NMT; Marian's ``--dropout-src`` / ``--dropout-trg``, Nematus'
``dropout_source`` / ``dropout_target``): ``model.source_word_dropout`` on the words the encoder
reads, ``model.decoder.word_dropout`` on the previous target words the decoder reads.

Ordinary dropout zeroes single units of an embedding; word dropout zeroes a position's whole
embedding vector, so the model learns to read a sentence with words missing, and scales the
survivors by 1 / (1 - p) so that evaluation, where it is the identity, sees the same magnitude.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class WordDropout(nn.Module):
    """Zero each position's vector [..., E] with probability ``p`` in training; scale the rest.

    Not an ``nn.Dropout``: the run-length rule (``train.short_run_dropout``), which sets every
    ``nn.Dropout`` of the model, leaves it at the configured probability.
    """

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"word dropout must be in [0, 1), got {p}")
        self.p = p

    def forward(self, embedded: Tensor) -> Tensor:  # [B, S, E] -> [B, S, E]
        if not self.training or self.p == 0:
            return embedded
        keep = torch.empty(embedded.shape[:-1] + (1,), device=embedded.device)  # [B, S, 1]
        keep.bernoulli_(1 - self.p)
        return embedded * (keep / (1 - self.p)).to(embedded.dtype)

    def extra_repr(self) -> str:
        return f"p={self.p}"
