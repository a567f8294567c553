"""Lexically constrained beam search: dynamic beam allocation (Post & Vilar, 2018), vectorized
over the batch as Hu et al. (2019) do it, with placement by attention.

Every hypothesis tracks which of its sentence's target phrases it has met, and which one it is
half-way through (and how far). Each step the candidates of a sentence are

* every live hypothesis's 2K best next words (the unconstrained search's candidates), and
* for every live hypothesis, the next piece of the phrase it is half-way through, or else the
  first piece of each phrase it has not met (the words that make progress),

after the same next-word rules as any search (the cap, a prefix). A candidate's *bank* is the
number of constraint pieces its hypothesis has met, the piece just added counted. The K places
of the beam go round the banks, from the fullest down: the best candidate of each bank, then
the second best of each, and so on, so that hypotheses that have met more pieces are kept
beside the most probable ones that have met fewer. A hypothesis that leaves a phrase half-way
loses the pieces it had met of it (its bank falls), unless its word starts a phrase again.
EOS is possible only once every phrase is met; at the cap, where EOS is forced, a hypothesis
that has not met them all still finishes, ranked below every one that has. Right after a
phrase, a piece that would glue onto its last word is not possible: a term stays a whole word
("Bahnsteig", never "Bahnsteige").

**Placement by attention.** A glossary term's phrase knows the source positions of its term.
``bonus`` adds ``weight * log(attention paid to the term's source positions)`` to a
hypothesis's *rank* when it starts the phrase (0 when all its attention is there), so that
among hypotheses that use a term, those that put it where the model is reading its source term
win, in the beam and among finished hypotheses. ``gate`` only offers a phrase's first piece as
a progress candidate while the step's attention is mostly (its argmax) on the term, or once the
hypothesis has no steps to spare. Neither changes a hypothesis's log p or score.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from nmtkit.registry import Constraints
from nmtkit.search.rules import NEG_INF
from nmtkit.search.topk import row_topk

PLACEMENTS = ("none", "bonus", "gate")
MIN_MASS = 1e-6  # attention mass below this counts as this much in the bonus's log


@dataclass(frozen=True, slots=True)
class Placement:
    """How the search places a term with a known source term (module docstring)."""

    how: str = "gate"  # one of PLACEMENTS
    weight: float = 1.0  # bonus: the weight of log(attention on the source term)


@dataclass(frozen=True, slots=True)
class Choice:
    """One step's choice for b sentences of K live hypotheses.

    Attributes:
        end_log_prob, end_rows, ends, end_met, end_bonus: the first K candidates in
            allocation order, [b, K]: their log p, the flat row they extend, whether their word
            is EOS (those finish), whether they have met every phrase, and their placement
            bonus.
        log_prob: the live hypotheses' log p, [b, K] (-inf for a dead one).
        rows, words: the row each live hypothesis extends and its word, [b*K].
        state: the live hypotheses' constraint state.
    """

    end_log_prob: Tensor
    end_rows: Tensor
    ends: Tensor
    end_met: Tensor
    end_bonus: Tensor
    log_prob: Tensor
    rows: Tensor
    words: Tensor
    state: RowState


@dataclass(frozen=True, slots=True)
class RowState:
    """What every row (hypothesis) has met of its sentence's phrases.

    Attributes:
        met: each phrase met, [N, C] (a sentence's missing phrases count as met).
        current: the phrase under way, -1 for none, [N]; depth: its pieces met so far, [N].
        bonus: the placement bonus gathered so far, added to the rank only, [N].
        closing: the last word met a phrase, so the next must start a new word, [N].
    """

    met: Tensor
    current: Tensor
    depth: Tensor
    bonus: Tensor
    closing: Tensor

    def select(self, rows: Tensor) -> RowState:
        return RowState(
            met=self.met[rows],
            current=self.current[rows],
            depth=self.depth[rows],
            bonus=self.bonus[rows],
            closing=self.closing[rows],
        )

    def all_met(self) -> Tensor:
        """Rows that have met every phrase: [N]."""
        return self.met.all(dim=1)


class ConstrainedChoice:
    """Chooses each step's K hypotheses of every sentence under its constraints.

    Args:
        constraints: the batch's phrases (B sentences).
        k: the beam size; placement: how terms with a known source term are placed.
    """

    def __init__(self, constraints: Constraints, k: int, *, placement: Placement) -> None:
        self.constraints = constraints
        self.k = k
        self.placement = placement
        batch_size, num_phrases = constraints.lengths.shape
        rows = torch.arange(batch_size, device=constraints.lengths.device).repeat_interleave(k)
        missing = constraints.lengths == 0  # [B, C]
        self.state = RowState(
            met=missing[rows],
            current=torch.full_like(rows, -1),
            depth=torch.zeros_like(rows),
            bonus=torch.zeros(rows.size(0), device=rows.device),
            closing=torch.zeros_like(rows, dtype=torch.bool),
        )
        self.most = int(constraints.lengths.sum(dim=1).max()) if num_phrases else 0

    def restrict(self, log_probs: Tensor, *, at_cap: Tensor, eos_id: int) -> Tensor:
        """No EOS for a row that has not met every phrase, unless it is at its cap ``at_cap``
        [N] (where the rules leave only EOS), and no piece that continues a word right after a
        phrase: ``log_probs`` [N, V]."""
        early = ~self.state.all_met() & ~at_cap  # [N]
        if bool(early.any()):
            log_probs[early, eos_id] = NEG_INF
        glue = self.constraints.continues_word
        if glue is not None and bool(self.state.closing.any()):
            log_probs.masked_fill_(self.state.closing[:, None] & glue[None, :], NEG_INF)
        return log_probs

    def choose(
        self,
        log_prob: Tensor,
        log_probs: Tensor,
        weights: Tensor,
        *,
        sentences: Tensor,
        room: Tensor,
        eos_id: int,
    ) -> Choice:
        """The step's choice.

        Args:
            log_prob: each live hypothesis's log p so far, [b, K] (-inf for a dead one).
            log_probs: the restricted next-word log-probabilities, [b*K, V].
            weights: this step's attention, [b*K, S].
            sentences: each row's sentence in the batch, [b*K].
            room: the words each row may still emit, this one included, [b*K] (for ``gate``).
        """
        b, k = log_prob.shape
        num_rows, vocab = log_probs.shape
        phrases = self.constraints.tokens[sentences]  # [N, C, L]
        lengths = self.constraints.lengths[sentences]  # [N, C]
        state = self.state

        # The unconstrained candidates: each row's 2K best words.
        n = min(2 * k, vocab)
        best, best_words = row_topk(log_probs, n)  # [N, n]
        # The progress candidates: the next piece of the phrase under way, else first pieces.
        num_phrases = phrases.size(1)
        under_way = torch.arange(num_phrases, device=phrases.device) == state.current[:, None]
        next_piece = phrases.gather(2, state.depth[:, None, None].expand(-1, num_phrases, 1))
        progress_words = torch.where(under_way, next_piece.squeeze(2), phrases[:, :, 0])  # [N, C]
        offered = ~state.met
        if self.placement.how == "gate":
            offered &= under_way | self._gate_open(weights, sentences, room, lengths)
        progress = log_probs.gather(1, progress_words).masked_fill(~offered, NEG_INF)  # [N, C]

        words = torch.cat([best_words, progress_words], dim=1)  # [N, n+C]
        totals = log_prob.reshape(-1, 1) + torch.cat([best, progress], dim=1)  # [N, n+C]
        width = words.size(1)
        rows = torch.arange(num_rows, device=words.device)[:, None].expand(-1, width)
        flat = rows.reshape(-1)
        after, started = self._advance(state, flat, words.reshape(-1), phrases, lengths)
        if self.placement.how == "bonus":
            bonus = after.bonus + self._start_bonus(started, flat, weights, sentences)
            after = dataclasses.replace(after, bonus=bonus)
        met_pieces = (lengths[rows.reshape(-1)] * after.met).sum(dim=1) + after.depth  # [N*w]

        # Per sentence: its K rows' candidates side by side, [b, K*w].
        totals = totals.reshape(b, k * width)
        words = words.reshape(b, k * width)
        flat_rows = rows.reshape(b, k * width)
        totals = _drop_repeats(totals, flat_rows * vocab + words)
        bank = met_pieces.reshape(b, k * width)
        rank = totals + after.bonus.reshape(b, k * width)
        order = _allocation_order(rank, bank, most=self.most)  # [b, K*w]
        totals, words, flat_rows = (t.gather(1, order) for t in (totals, words, flat_rows))
        picked = order + (torch.arange(b, device=order.device) * k * width)[:, None]
        after = after.select(picked.reshape(-1))
        valid = torch.isfinite(totals)
        ends = (words == eos_id) & valid
        end_met = after.all_met().reshape(b, -1)[:, :k]
        end_bonus = after.bonus.reshape(b, -1)[:, :k]
        # The live: the K first candidates in allocation order that do not end.
        alive = torch.where(ends | ~valid, 1, 0).argsort(dim=1, stable=True)[:, :k]  # [b, K]
        live_total = totals.gather(1, alive).masked_fill(ends.gather(1, alive), NEG_INF)
        live_index = (alive + (torch.arange(b, device=alive.device) * k * width)[:, None]).view(-1)
        return Choice(
            end_log_prob=totals[:, :k],
            end_rows=flat_rows[:, :k],
            ends=ends[:, :k],
            end_met=end_met,
            end_bonus=end_bonus,
            log_prob=live_total,
            rows=flat_rows.gather(1, alive).view(-1),
            words=words.gather(1, alive).view(-1),
            state=after.select(live_index),
        )

    def advance(self, state: RowState) -> None:
        """The live hypotheses' state after the step (:attr:`Choice.state`)."""
        self.state = state

    def keep(self, rows: Tensor) -> None:
        """Keep only the rows ``rows`` (of the sentences still searching)."""
        self.state = self.state.select(rows)

    def _advance(
        self, state: RowState, rows: Tensor, words: Tensor, phrases: Tensor, lengths: Tensor
    ) -> tuple[RowState, Tensor]:
        """The state after row ``rows[m]`` emits ``words[m]``, [M] candidates, and the phrase
        each starts (-1 for none), [M].

        The phrase under way goes on if the word is its next piece (and is met at its last);
        otherwise it is left, and the word starts the first unmet phrase it begins, if any.
        """
        met, current, depth = state.met[rows], state.current[rows], state.depth[rows]
        phrases, lengths = phrases[rows], lengths[rows]  # [M, C, L], [M, C]
        num_phrases = phrases.size(1)
        going = current >= 0
        safe = current.clamp(min=0)[:, None]  # [M, 1]
        expected = phrases[torch.arange(rows.numel(), device=rows.device), safe[:, 0], depth]
        goes_on = going & (words == expected)
        depth_on = depth + 1
        done_on = goes_on & (depth_on == lengths.gather(1, safe)[:, 0])

        starts = ~met & (lengths > 0) & (phrases[:, :, 0] == words[:, None])  # [M, C]
        started = ~goes_on & starts.any(dim=1)
        first = starts.int().argmax(dim=1)  # the first phrase the word starts
        done_start = started & (lengths.gather(1, first[:, None])[:, 0] == 1)

        finished = torch.where(goes_on, current, first)  # the phrase met now, if any
        completes = done_on | done_start
        one_hot = torch.arange(num_phrases, device=rows.device) == finished[:, None]
        new_met = met | (one_hot & completes[:, None])
        new_current = torch.where(
            goes_on & ~done_on, current, torch.where(started & ~done_start, first, -1)
        )
        new_depth = torch.where(
            goes_on & ~done_on, depth_on, torch.where(started & ~done_start, 1, 0)
        )
        after = RowState(
            met=new_met,
            current=new_current,
            depth=new_depth,
            bonus=state.bonus[rows],
            closing=completes,
        )
        return after, torch.where(started, first, -1)

    def _start_bonus(
        self, started: Tensor, rows: Tensor, weights: Tensor, sentences: Tensor
    ) -> Tensor:
        """The placement bonus of each candidate that starts (``started`` [M], -1 for none) a
        phrase of a known source term: weight * log(attention on the term), else 0: [M]."""
        sources = self.constraints.sources[sentences[rows], started.clamp(min=0)]  # [M, S]
        known = (started >= 0) & sources.any(dim=1)
        mass = (weights[rows].float() * sources).sum(dim=1).clamp(min=MIN_MASS)  # [M]
        bonus = self.placement.weight * mass.log()
        return torch.where(known, bonus, torch.zeros_like(bonus))

    def _gate_open(
        self, weights: Tensor, sentences: Tensor, room: Tensor, lengths: Tensor
    ) -> Tensor:
        """Whether each row may start each phrase now: its term is unknown, the attention's
        argmax is on the term, or the row has no steps to spare: [N, C]."""
        sources = self.constraints.sources[sentences]  # [N, C, S]
        focus = weights.float().argmax(dim=1)  # [N]
        on_term = sources.gather(2, focus[:, None, None].expand(-1, sources.size(1), 1))[:, :, 0]
        needed = (lengths * ~self.state.met).sum(dim=1) - self.state.depth  # [N]
        late = room <= needed
        return ~sources.any(dim=2) | on_term | late[:, None]


def _drop_repeats(totals: Tensor, keys: Tensor) -> Tensor:
    """``totals`` [b, M] with every repeat of a candidate key but one made -inf (a word a row
    offers both as one of its best and as progress)."""
    sorted_keys, order = keys.sort(dim=1, stable=True)
    repeat = torch.zeros_like(sorted_keys, dtype=torch.bool)
    repeat[:, 1:] = sorted_keys[:, 1:] == sorted_keys[:, :-1]
    drop = torch.zeros_like(repeat).scatter(1, order, repeat)
    return totals.masked_fill(drop, NEG_INF)


def _allocation_order(rank: Tensor, bank: Tensor, *, most: int) -> Tensor:
    """The order [b, M] in which candidates take places in the beam: round the banks from the
    fullest down, each bank's best first; impossible candidates (rank -inf) last."""
    by_rank = rank.argsort(dim=1, descending=True, stable=True)
    banks = bank.gather(1, by_rank)
    by_bank = banks.argsort(dim=1, descending=True, stable=True)
    order = by_rank.gather(1, by_bank)
    banks = banks.gather(1, by_bank)
    positions = torch.arange(banks.size(1), device=banks.device).expand_as(banks)
    first = torch.ones_like(banks, dtype=torch.bool)
    first[:, 1:] = banks[:, 1:] != banks[:, :-1]
    place_in_bank = positions - torch.where(first, positions, 0).cummax(dim=1).values
    valid = torch.isfinite(rank.gather(1, order))
    key = place_in_bank * (most + 1) + (most - banks)
    key = key.masked_fill(~valid, torch.iinfo(key.dtype).max)
    return order.gather(1, key.argsort(dim=1, stable=True))


@dataclass(frozen=True, slots=True)
class Phrase:
    """One target phrase a sentence's translation must contain: its target ids, and the source
    positions of the term it translates (empty for a bare constraint)."""

    ids: tuple[int, ...]
    source: tuple[int, ...] = ()


def constraints_of(
    sentences: Sequence[Sequence[Phrase]],
    *,
    src_len: int,
    continues_word: Tensor | None = None,
    device: torch.device | str = "cpu",
) -> Constraints | None:
    """The :class:`Constraints` of a batch of sentences' phrases (source length ``src_len``,
    EOS included; ``continues_word``: :attr:`Constraints.continues_word`); None when no
    sentence has any."""
    num_phrases = max((len(phrases) for phrases in sentences), default=0)
    if num_phrases == 0:
        return None
    longest = max(len(phrase.ids) for phrases in sentences for phrase in phrases)
    batch_size = len(sentences)
    tokens = torch.zeros(batch_size, num_phrases, longest, dtype=torch.long)
    lengths = torch.zeros(batch_size, num_phrases, dtype=torch.long)
    sources = torch.zeros(batch_size, num_phrases, src_len, dtype=torch.bool)
    for b, phrases in enumerate(sentences):
        for c, phrase in enumerate(phrases):
            tokens[b, c, : len(phrase.ids)] = torch.tensor(phrase.ids, dtype=torch.long)
            lengths[b, c] = len(phrase.ids)
            sources[b, c, list(phrase.source)] = True
    return Constraints(
        tokens=tokens.to(device),
        lengths=lengths.to(device),
        sources=sources.to(device),
        continues_word=None if continues_word is None else continues_word.to(device),
    )
