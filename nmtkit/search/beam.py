"""Beam search, batched over sentences and beams; a finished sentence leaves the batch at once
(``DecoderState.select``), so long sentences never make short ones pay."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import torch
from torch import Tensor

from nmtkit.errors import ConfigError
from nmtkit.registry import (
    Constraints,
    DecoderState,
    Hypothesis,
    SearchStrategy,
    Translatable,
    register,
)
from nmtkit.search.constrained import PLACEMENTS, ConstrainedChoice, Placement
from nmtkit.search.rules import NEG_INF, NextWordRules
from nmtkit.search.topk import row_topk

# Coverage below this counts as this much, so that cp stays finite for an unattended position.
MIN_COVERAGE = 1e-10

Length = TypeVar("Length", float, Tensor)


@register("search", "beam")
class BeamSearch(SearchStrategy):
    """Beam search ranked by the GNMT score (Wu et al., 2016, eq. 14):
    s(Y, X) = log P(Y|X) / lp(Y) + cp(X; Y), with lp(Y) = ((5 + |Y|) / 6)^alpha and
    cp(X; Y) = beta * sum_j log(min(sum_i alpha_ij, 1)).

    |Y| counts EOS; j runs over the real source positions (EOS included) and i over every output
    step (EOS included), so the coverage is that of the finishing row after its EOS step.
    alpha = 0 ranks by raw log p, beta = 0 turns the coverage penalty off.

    Each step takes the 2K best continuations of the K live hypotheses of every sentence;
    those ending in EOS among the first K are finished, and the K best others live on. With
    ``early_stopping`` a sentence is done once it has K finished hypotheses (as in fairseq).
    Without it, a sentence goes on until none of its live hypotheses can beat the worst of its
    K best finished ones: a live hypothesis with log p so far can at best score
    log p / max(lp(|Y| now + 1), lp(cap + 1)) (log p only falls, cp <= 0), the bound of Hugging
    Face's ``early_stopping="never"``. The cap ends every sentence.
    """

    description = "beam search, batched over sentences and beams, GNMT length/coverage penalty"

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        beam_size: int = 5  # K
        length_penalty: float = 1.0  # alpha in lp(Y) = ((5 + |Y|) / 6)^alpha; 0 = raw log p
        coverage_penalty: float = 0.0  # beta in cp(X; Y); 0 = off
        early_stopping: bool = True  # done at K finished hypotheses; False: while any can win
        # Under constraints: how a glossary term is placed (nmtkit.search.constrained).
        term_placement: str = "gate"  # none, bonus or gate (measured: docs/terminology.md)
        term_placement_weight: float = 1.0  # bonus: weight of log(attention on the source term)

        def __post_init__(self) -> None:
            if self.term_placement not in PLACEMENTS:
                raise ConfigError(
                    f"term_placement must be one of {', '.join(PLACEMENTS)}, "
                    f"got {self.term_placement!r}",
                    where="search.strategy",
                )
            if self.beam_size < 1:
                raise ConfigError(
                    f"beam_size must be at least 1, got {self.beam_size}", where="search.strategy"
                )
            if self.coverage_penalty < 0:
                raise ConfigError(
                    f"coverage_penalty must not be negative, got {self.coverage_penalty}",
                    where="search.strategy",
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
        """See :meth:`SearchStrategy.search`; under ``constraints``, the search of
        :mod:`nmtkit.search.constrained`."""
        k = self.config.beam_size
        rules = NextWordRules(max_lengths, prefix, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
        state = model.init_state(model.encode(src, lengths))
        beams = _Beams(state, k, bos_id=bos_id, with_weights=with_weights)
        finished = _Finished(self.config, max_lengths)
        constrained = None
        if constraints is not None:
            placement = Placement(
                how=self.config.term_placement, weight=self.config.term_placement_weight
            )
            constrained = ConstrainedChoice(constraints, k, placement=placement)
        for t in range(int(max_lengths.max()) + 1):
            step = model.decode_step(beams.prev, beams.state)
            sentences = beams.row_sentences()  # [b*K]
            log_probs = rules.apply(step.log_probs, sentences=sentences, step=t)
            beams.record(step.weights)
            if constrained is None:
                totals, rows, words = _expand(beams.log_prob, log_probs)  # [b, 2K] each
                ends = words == eos_id
                finished.add(beams, step.state, totals[:, :k], rows[:, :k], ends[:, :k])
                beams.advance(step.state, *_prune(totals, rows, words, ends_mask=ends, k=k))
            else:
                room = max_lengths[sentences] - t  # [b*K] words left, this one included
                log_probs = constrained.restrict(log_probs, at_cap=room <= 0, eos_id=eos_id)
                choice = constrained.choose(
                    beams.log_prob,
                    log_probs,
                    step.weights,
                    sentences=sentences,
                    room=room,
                    eos_id=eos_id,
                )
                finished.add(
                    beams,
                    step.state,
                    choice.end_log_prob,
                    choice.end_rows,
                    choice.ends,
                    met=choice.end_met,
                    bonus=choice.end_bonus,
                )
                beams.advance(step.state, choice.log_prob, choice.rows, choice.words)
                constrained.advance(choice.state)
            done = finished.done(beams, step=t)  # [b]
            if bool(done.all()):
                break
            if bool(done.any()):
                kept = beams.keep((~done).nonzero().squeeze(1))
                if constrained is not None:
                    constrained.keep(kept)
        return finished.best(k)

    def score(
        self, log_prob: Tensor, *, lengths: Tensor, coverage: Tensor, pad_mask: Tensor
    ) -> Tensor:
        """GNMT's s(Y, X) = log p / lp(Y) + cp(X; Y), as :meth:`search` scores a finished
        hypothesis: [N]."""
        cfg = self.config
        lp = length_penalty(lengths.double(), cfg.length_penalty)  # [N]
        cp = coverage_penalty(coverage, pad_mask, cfg.coverage_penalty)  # [N]
        return log_prob.double() / lp + cp.double()


def length_penalty(length: Length, alpha: float) -> Length:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al., 2016, eq. 14)."""
    return ((5 + length) / 6) ** alpha


def coverage_penalty(coverage: Tensor, pad_mask: Tensor, beta: float) -> Tensor:
    """GNMT's cp = beta * sum_j log(min(coverage_j, 1)) over real positions j: [N].

    Args:
        coverage: attention paid to each source position so far, [N, S].
        pad_mask: True at padding, [N, S].
    """
    capped = coverage.float().clamp(min=MIN_COVERAGE, max=1.0)  # [N, S]
    return beta * capped.log().masked_fill(pad_mask, 0.0).sum(dim=-1)  # [N]


def _expand(log_prob: Tensor, log_probs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The 2K best continuations of each sentence's K hypotheses.

    Args:
        log_prob: each live hypothesis's log p so far, [b, K] (-inf for dead beams).
        log_probs: next-word log-probabilities, [b*K, V].

    Returns:
        totals [b, 2K] (best first), the flat rows [b, 2K] they extend, and their words [b, 2K].
    """
    b, k = log_prob.shape
    n = min(2 * k, log_probs.size(-1))
    # A sentence's 2K best continuations use at most 2K words of any one row, so the rows'
    # own n best words hold them all: [b*K, n] instead of adding log p to all V words.
    row_best, row_words = row_topk(log_probs.float(), n)  # [b*K, n]
    totals = log_prob[:, :, None] + row_best.view(b, k, n)  # [b, K, n]
    top, index = totals.view(b, k * n).topk(min(2 * k, k * n), dim=1)  # [b, 2K]
    offsets = torch.arange(b, device=log_prob.device) * k
    rows = torch.div(index, n, rounding_mode="floor") + offsets[:, None]
    return top, rows, row_words.view(b, k * n).gather(1, index)


def _prune(
    totals: Tensor, rows: Tensor, words: Tensor, *, ends_mask: Tensor, k: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Keep the K best continuations that do not end: log p [b, K], rows [b*K], words [b*K]."""
    alive = totals.masked_fill(ends_mask, NEG_INF)
    if alive.size(1) < k:  # a vocabulary smaller than the beam
        pad = alive.new_full((alive.size(0), k - alive.size(1)), NEG_INF)
        alive = torch.cat([alive, pad], dim=1)
        rows = torch.cat([rows, rows[:, :1].expand(-1, pad.size(1))], dim=1)
        words = torch.cat([words, words[:, :1].expand(-1, pad.size(1))], dim=1)
    best, order = alive.topk(k, dim=1)  # [b, K]
    return best, rows.gather(1, order).view(-1), words.gather(1, order).view(-1)


class _Beams:
    """The K live hypotheses of every unfinished sentence, flattened to rows b*K.

    Attributes:
        live: the batch indices of the sentences still searching, [b].
        log_prob: each live hypothesis's log p so far, [b, K] (-inf for a dead beam).
        history: words so far, [b*K, t]; attn: attention per step, [b*K, t, S] (or None).
        state: the decoder state of every row; prev: each row's last word, [b*K].
    """

    def __init__(self, state: DecoderState, k: int, *, bos_id: int, with_weights: bool) -> None:
        batch_size, src_len = state.pad_mask.shape
        device = state.pad_mask.device
        self.k = k
        self.live = torch.arange(batch_size, device=device)  # [B]
        self.log_prob = torch.full((batch_size, k), NEG_INF, device=device)  # [B, K]
        self.log_prob[:, 0] = 0.0  # at the start only the first beam is real
        self.state = state.select(self.live.repeat_interleave(k))  # rows B*K
        self.history = torch.zeros(batch_size * k, 0, dtype=torch.long, device=device)
        self.attn = torch.zeros(batch_size * k, 0, src_len, device=device) if with_weights else None
        self.prev = torch.full((batch_size * k,), bos_id, dtype=torch.long, device=device)

    def row_sentences(self) -> Tensor:
        """The batch index of every row: [b*K]."""
        return self.live.repeat_interleave(self.k)

    def record(self, weights: Tensor) -> None:
        """Append this step's attention weights [b*K, S], before the rows are re-ordered."""
        if self.attn is not None:
            self.attn = torch.cat([self.attn, weights.float()[:, None]], dim=1)  # [b*K, t+1, S]

    def advance(self, state: DecoderState, log_prob: Tensor, rows: Tensor, words: Tensor) -> None:
        """Continue rows ``rows`` [b*K] with ``words`` [b*K]; ``log_prob`` [b, K] becomes theirs."""
        self.log_prob = log_prob
        self.history = torch.cat([self.history[rows], words[:, None]], dim=1)  # [b*K, t+1]
        self.state = state.reorder(rows)  # rows stay within their sentence's K
        self.attn = None if self.attn is None else self.attn[rows]
        self.prev = words

    def keep(self, sentences: Tensor) -> Tensor:
        """Keep only the live sentences at ``sentences`` [b'] (indices into ``live``); the rows
        kept, [b'*K]."""
        arange = torch.arange(self.k, device=sentences.device)
        rows = (sentences[:, None] * self.k + arange).view(-1)  # [b'*K]
        self.live, self.log_prob = self.live[sentences], self.log_prob[sentences]
        self.history, self.state = self.history[rows], self.state.select(rows)
        self.attn = None if self.attn is None else self.attn[rows]
        self.prev = self.prev[rows]
        return rows


class _Finished:
    """Finished hypotheses of every sentence of the original batch, and when to stop.

    Under constraints, a hypothesis that finished (at its cap) without meeting them all is
    kept apart: it ranks below every one that did, and does not count towards stopping.
    """

    def __init__(self, config: BeamSearch.Config, max_lengths: Tensor) -> None:
        batch_size, device = max_lengths.size(0), max_lengths.device
        self.config = config
        self.max_lengths = max_lengths  # [B]
        # (rank, hypothesis): the rank is the score plus any placement bonus
        self.hypotheses: list[list[tuple[float, Hypothesis]]] = [[] for _ in range(batch_size)]
        self.unmet: list[list[tuple[float, Hypothesis]]] = [[] for _ in range(batch_size)]
        self.counts = torch.zeros(batch_size, dtype=torch.long, device=device)  # [B]
        self.kth_score = torch.full((batch_size,), NEG_INF, device=device)  # [B] K-th best

    def add(
        self,
        beams: _Beams,
        state: DecoderState,
        totals: Tensor,
        rows: Tensor,
        ends: Tensor,
        *,
        met: Tensor | None = None,
        bonus: Tensor | None = None,
    ) -> None:
        """Record the continuations where ``ends`` [b, K] is True (and the log p ``totals``
        [b, K] is finite); ``rows`` [b, K] index ``state``, the step's state after EOS.
        ``met`` [b, K] says which met their constraints (None: all); ``bonus`` [b, K] is
        their placement bonus, added to their rank (None: 0)."""
        ends = ends & torch.isfinite(totals)
        if not bool(ends.any()):
            return
        unmet = [] if met is None else (~met[ends]).tolist()
        bonuses = [0.0] * int(ends.sum()) if bonus is None else bonus[ends].tolist()
        flat = rows[ends]  # [n]
        penalties = coverage_penalty(
            state.coverage[flat], state.pad_mask[flat], self.config.coverage_penalty
        )  # [n]
        lp = length_penalty(float(beams.history.size(1) + 1), self.config.length_penalty)
        sentences = beams.live[ends.nonzero()[:, 0]]  # [n]
        for number, (sentence, row, total, cp) in enumerate(
            zip(
                sentences.tolist(),
                flat.tolist(),
                totals[ends].tolist(),
                penalties.tolist(),
                strict=True,
            )
        ):
            kept = self.unmet if unmet and unmet[number] else self.hypotheses
            hypothesis = Hypothesis(
                tokens=beams.history[row].tolist(),
                score=total / lp + cp,
                log_prob=total,
                # a copy: a view would keep the whole [b*K, t, S] history of this step
                weights=None if beams.attn is None else beams.attn[row].clone().cpu(),
            )
            kept[sentence].append((hypothesis.score + bonuses[number], hypothesis))
        for sentence in set(sentences.tolist()):
            self._update(sentence)

    def _update(self, sentence: int) -> None:
        k, hyps = self.config.beam_size, self.hypotheses[sentence]
        self.counts[sentence] = len(hyps)
        if len(hyps) >= k:
            self.kth_score[sentence] = sorted((rank for rank, _ in hyps), reverse=True)[k - 1]

    def done(self, beams: _Beams, *, step: int) -> Tensor:
        """Which live sentences [b] need no more search, after step ``step`` (0-based)."""
        best = beams.log_prob.max(dim=1).values  # [b]
        no_live = ~torch.isfinite(best)
        full = self.counts[beams.live] >= self.config.beam_size
        if self.config.early_stopping:
            return full | no_live
        alpha = self.config.length_penalty
        longest = (self.max_lengths[beams.live] + 1).float()  # [b], words + EOS
        shortest = torch.full_like(longest, step + 2)  # one more word: EOS
        reach = torch.maximum(length_penalty(longest, alpha), length_penalty(shortest, alpha))
        return no_live | (full & (best / reach <= self.kth_score[beams.live]))

    def best(self, n: int) -> list[list[Hypothesis]]:
        """Each sentence's ``n`` best hypotheses by rank, the score when no placement bonus
        applies (those that met their constraints first)."""
        return [
            [hyp for _, hyp in sorted(hyps, key=_by_rank) + sorted(unmet, key=_by_rank)][:n]
            for hyps, unmet in zip(self.hypotheses, self.unmet, strict=True)
        ]


def _by_rank(ranked: tuple[float, Hypothesis]) -> float:
    return -ranked[0]
