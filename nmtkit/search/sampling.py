"""Sampling: each word drawn from the model's distribution, reshaped by temperature, top-k and
top-p (nucleus); batched over sentences x samples, reproducible sentence by sentence."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from nmtkit.errors import ConfigError
from nmtkit.registry import Constraints, Hypothesis, SearchStrategy, Translatable, register
from nmtkit.search.rows import decode_rows
from nmtkit.search.rules import NEG_INF, NextWordRules, refuse_constraints


@register("search", "sampling")
class SamplingSearch(SearchStrategy):
    """Draw ``num_samples`` translations per sentence word by word from
    softmax(log p / temperature), cut to the ``top_k`` most probable words and then to the
    nucleus of mass ``top_p`` (Holtzman et al., 2020). Samples are ranked by log p / length (EOS
    counted) under the model itself, as greedy's output is; ``log_prob`` is their sum.

    Randomness belongs to each sentence, not to the batch: a sentence's generator is seeded from
    ``seed`` and its source ids (a blake2b hash) and draws, on the CPU, one uniform per sample
    and step; the word is the inverse CDF of the reshaped distribution at that uniform (one draw
    a step, where Gumbel-max would need V). So a sentence gets the same samples whatever shares
    its batch, at any position and on any device (up to float rounding of the model), and two
    identical source lines get identical samples.
    """

    description = "random sampling with temperature, top-k and top-p; n-best = ranked samples"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        temperature: float = 1.0  # divides log p before sampling; below 1 sharpens
        top_k: int = 0  # sample among the k most probable words; 0 = all words
        top_p: float = 1.0  # sample within the smallest set of mass >= top_p; 1.0 = all words
        num_samples: int = 1  # samples per sentence, returned best first
        seed: int = 1  # with each sentence's source ids, seeds that sentence's generator

        def __post_init__(self) -> None:
            where = "search.strategy"
            if self.temperature <= 0:
                raise ConfigError(
                    f"temperature must be positive, got {self.temperature}", where=where
                )
            if self.top_k < 0:
                raise ConfigError(f"top_k must not be negative, got {self.top_k}", where=where)
            if not 0 < self.top_p <= 1:
                raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}", where=where)
            if self.num_samples < 1:
                raise ConfigError(
                    f"num_samples must be at least 1, got {self.num_samples}", where=where
                )

    @torch.no_grad()
    def search(
        self,
        model: Translatable,
        src: Tensor,
        lengths: Tensor,
        *,
        max_lengths: Tensor,
        pad_id: int,
        bos_id: int,
        eos_id: int,
        with_weights: bool = False,
        prefix: Tensor | None = None,
        constraints: Constraints | None = None,
    ) -> list[list[Hypothesis]]:
        refuse_constraints(constraints, "sampling")
        n = self.config.num_samples
        rules = NextWordRules(max_lengths, prefix, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
        sentences = torch.arange(src.size(0), device=src.device).repeat_interleave(n)  # [B*N]
        uniforms = draw_uniforms(
            src.tolist(), lengths.tolist(), max_lengths.tolist(), seed=self.config.seed, n=n
        ).to(src.device)  # [B*N, T]

        def pick(log_probs: Tensor, rows: Tensor, step: int) -> Tensor:
            logits = log_probs / self.config.temperature  # [n, V]
            logits = keep_top_p(keep_top_k(logits, self.config.top_k), self.config.top_p)
            return sample_inverse_cdf(logits, uniforms[rows, step])

        state = model.init_state(model.encode(src, lengths)).select(sentences)
        samples = decode_rows(
            model,
            state,
            rules,
            row_sentences=sentences,
            pick=pick,
            bos_id=bos_id,
            with_weights=with_weights,
        )
        return [
            sorted(samples[b * n : (b + 1) * n], key=lambda h: -h.score) for b in range(src.size(0))
        ]


def keep_top_k(logits: Tensor, k: int) -> Tensor:
    """Leave only the ``k`` highest logits of each row [N, V] (ties with the k-th stay); the
    rest become -inf. ``k`` = 0 keeps every word: [N, V]."""
    if k <= 0 or k >= logits.size(-1):
        return logits
    kth = logits.topk(k, dim=-1).values[:, -1:]  # [N, 1]
    return logits.masked_fill(logits < kth, NEG_INF)


def keep_top_p(logits: Tensor, p: float) -> Tensor:
    """Leave only each row's nucleus: the fewest most probable words whose probability sums
    to at least ``p`` (the most probable word always stays); the rest become -inf: [N, V]."""
    if p >= 1.0:
        return logits
    ordered, order = logits.sort(dim=-1, descending=True)  # [N, V]
    probs = ordered.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # mass of the more probable words
    drop = torch.zeros_like(before, dtype=torch.bool).scatter(1, order, before >= p)
    return logits.masked_fill(drop, NEG_INF)


def sample_inverse_cdf(logits: Tensor, uniforms: Tensor) -> Tensor:
    """Pick one word per row of ``logits`` [N, V] at ``uniforms`` [N] in [0, 1) by inverse CDF:
    the first word whose cumulative probability exceeds u, so words of probability 0 are never
    picked: [N]."""
    cdf = logits.double().softmax(dim=-1).cumsum(dim=-1)  # [N, V]
    target = uniforms.double()[:, None] * cdf[:, -1:]  # [N, 1], below the total mass
    words = torch.searchsorted(cdf, target, right=True).squeeze(1)  # [N]
    return words.clamp(max=logits.size(-1) - 1)  # rounding guard; unreachable in exact arithmetic


def sentence_seed(seed: int, ids: Sequence[int]) -> int:
    """A 63-bit generator seed from ``seed`` and a sentence's source ids."""
    data = " ".join(map(str, [seed, *ids])).encode("ascii")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") >> 1


def draw_uniforms(
    src: list[list[int]], lengths: list[int], max_lengths: list[int], *, seed: int, n: int
) -> Tensor:
    """Each sentence's uniforms for its ``n`` samples and every step up to its cap, from its
    own CPU generator: [B*N, T], row b*N + j for sample j of sentence b."""
    steps = max(max_lengths) + 1
    out = torch.zeros(len(src), n, steps)  # [B, N, T]
    for b, (ids, length, cap) in enumerate(zip(src, lengths, max_lengths, strict=True)):
        generator = torch.Generator().manual_seed(sentence_seed(seed, ids[:length]))
        out[b, :, : cap + 1] = torch.rand(cap + 1, n, generator=generator).T  # [N, cap+1]
    return out.view(len(src) * n, steps)
