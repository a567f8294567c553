"""Beam search, batched over sentences and beams; a finished sentence leaves the batch at once
(``DecoderState.select``), so long sentences never make short ones pay."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from nmtkit.registry import Hypothesis, SearchStrategy, Translatable, register
from nmtkit.search.common import NEG_INF, restrict_next_words


@register("search", "beam")
class BeamSearch(SearchStrategy):
    """Beam search with length normalization: hypotheses ranked by log p / length^alpha.

    Each step takes the 2K best continuations of the K live hypotheses of every sentence;
    those ending in EOS among the first K are finished, and the K best others live on. A sentence
    is done once it has K finished hypotheses (as in fairseq).
    """

    description = "beam search, batched over sentences and beams, length-normalized"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        beam_size: int = 5
        length_penalty: float = 1.0  # alpha in score = log p / length^alpha; 0 = raw log p

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
    ) -> list[list[Hypothesis]]:
        batch_size, k, device = src.size(0), self.config.beam_size, src.device
        state = model.init_state(model.encode(src, lengths))
        state = state.select(torch.arange(batch_size, device=device).repeat_interleave(k))
        live = torch.arange(batch_size, device=device)  # sentences still searching
        scores = torch.full((batch_size, k), NEG_INF, device=device)  # [B, K]
        scores[:, 0] = 0.0  # at the start only the first beam is real
        history = torch.zeros(batch_size * k, 0, dtype=torch.long, device=device)  # [B*K, t]
        attn = torch.zeros(batch_size * k, 0, src.size(1), device=device)  # [B*K, t, S]
        prev = torch.full((batch_size * k,), bos_id, dtype=torch.long, device=device)
        finished = _Finished(batch_size, self.config.length_penalty, device)
        for t in range(int(max_lengths.max()) + 1):
            step = model.decode_step(prev, state)
            at_cap = (max_lengths[live] <= t).repeat_interleave(k)
            log_probs = restrict_next_words(
                step.log_probs, at_cap, banned=(pad_id, bos_id), eos_id=eos_id
            )
            if with_weights:
                attn = torch.cat([attn, step.weights.float()[:, None]], dim=1)  # [B*K, t+1, S]
            totals, rows, words = _expand(scores, log_probs)  # [b, 2K] each
            ends = words[:, :k] == eos_id
            finished.add(
                live, ends, totals[:, :k], rows[:, :k], history, attn if with_weights else None
            )
            scores, rows, words = _prune(totals, rows, words, ends_mask=words == eos_id, k=k)
            history = torch.cat([history[rows], words[:, None]], dim=1)  # [b*K, t+1]
            state = step.state.select(rows)
            attn = attn[rows] if with_weights else attn
            done = finished.counts[live] >= k  # [b]
            if bool(done.any()):
                keep = (~done).nonzero().squeeze(1)  # sentences
                if keep.numel() == 0:
                    break
                keep_rows = (keep[:, None] * k + torch.arange(k, device=device)).view(-1)
                live, scores, words = live[keep], scores[keep], words[keep_rows]
                history, state = history[keep_rows], state.select(keep_rows)
                attn = attn[keep_rows] if with_weights else attn
            prev = words
        return finished.best(k)


def _expand(scores: Tensor, log_probs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The 2K best continuations of each sentence's K hypotheses.

    Args:
        scores: live hypotheses' log-probabilities, [b, K] (-inf for dead beams).
        log_probs: next-word log-probabilities, [b*K, V].

    Returns:
        totals [b, 2K] (best first), the flat rows [b, 2K] they extend, and their words [b, 2K].
    """
    b, k = scores.shape
    vocab = log_probs.size(-1)
    totals = scores[:, :, None] + log_probs.view(b, k, vocab)  # [b, K, V]
    top, index = totals.view(b, k * vocab).topk(min(2 * k, k * vocab), dim=1)  # [b, 2K]
    offsets = torch.arange(b, device=scores.device) * k
    rows = torch.div(index, vocab, rounding_mode="floor") + offsets[:, None]
    return top, rows, index % vocab


def _prune(
    totals: Tensor, rows: Tensor, words: Tensor, *, ends_mask: Tensor, k: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Keep the K best continuations that do not end: scores [b, K], rows [b*K], words [b*K]."""
    alive = totals.masked_fill(ends_mask, NEG_INF)
    if alive.size(1) < k:  # a vocabulary smaller than the beam
        pad = alive.new_full((alive.size(0), k - alive.size(1)), NEG_INF)
        alive = torch.cat([alive, pad], dim=1)
        rows = torch.cat([rows, rows[:, :1].expand(-1, pad.size(1))], dim=1)
        words = torch.cat([words, words[:, :1].expand(-1, pad.size(1))], dim=1)
    best, order = alive.topk(k, dim=1)  # [b, K]
    return best, rows.gather(1, order).view(-1), words.gather(1, order).view(-1)


class _Finished:
    """Finished hypotheses of every sentence of the original batch."""

    def __init__(self, batch_size: int, length_penalty: float, device: torch.device) -> None:
        self.hypotheses: list[list[Hypothesis]] = [[] for _ in range(batch_size)]
        self.counts = torch.zeros(batch_size, dtype=torch.long, device=device)  # [B]
        self.alpha = length_penalty

    def add(
        self,
        live: Tensor,
        ends: Tensor,
        totals: Tensor,
        rows: Tensor,
        history: Tensor,
        attn: Tensor | None,
    ) -> None:
        """Record the continuations where ``ends`` [b, K] is True (and the score is finite)."""
        ends = ends & torch.isfinite(totals)
        if not bool(ends.any()):
            return
        length = history.size(1) + 1  # words so far plus EOS
        for sentence, rank in ends.nonzero().tolist():
            row, total = int(rows[sentence, rank]), float(totals[sentence, rank])
            original = int(live[sentence])
            self.hypotheses[original].append(
                Hypothesis(
                    tokens=history[row].tolist(),
                    score=total / length**self.alpha,
                    log_prob=total,
                    weights=None if attn is None else attn[row].cpu(),
                )
            )
            self.counts[original] += 1

    def best(self, n: int) -> list[list[Hypothesis]]:
        """Each sentence's ``n`` best hypotheses by score."""
        return [sorted(hyps, key=lambda h: -h.score)[:n] for hyps in self.hypotheses]
