"""A search strategy restricted to each sentence's shortlist candidates (:mod:`nmtkit.shortlist`
says what that changes in the scores)."""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from nmtkit.models import Seq2Seq
from nmtkit.registry import (
    Constraints,
    DecoderState,
    EncoderOutput,
    Hypothesis,
    SearchStrategy,
    ShortlistRows,
    StepOutput,
    Translatable,
)
from nmtkit.search.ensemble import Ensemble
from nmtkit.shortlist.table import SPECIAL_IDS, Shortlist

log = logging.getLogger(__name__)


class ShortlistSearch(SearchStrategy):
    """``strategy`` over each sentence's candidates of ``shortlist``: the sentences the table
    covers over their own candidates alone (the output layer cut once to the union of theirs),
    the others (if any) apart, over the whole vocabulary. Its scores are ``strategy``'s."""

    def __init__(self, strategy: SearchStrategy, shortlist: Shortlist) -> None:
        super().__init__(strategy.config)
        self.strategy = strategy
        self.shortlist = shortlist

    def score(
        self, log_prob: Tensor, *, lengths: Tensor, coverage: Tensor, pad_mask: Tensor
    ) -> Tensor:
        return self.strategy.score(log_prob, lengths=lengths, coverage=coverage, pad_mask=pad_mask)

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
        assert isinstance(model, Seq2Seq | Ensemble), "a shortlist cuts a model's output rows"
        special = (*SPECIAL_IDS, pad_id, bos_id, eos_id)
        covered = self.shortlist.covers(src, special=special)  # [B]
        found: list[list[Hypothesis]] = [[] for _ in range(src.size(0))]
        for rows, restrict in (
            (covered.nonzero()[:, 0], True),
            ((~covered).nonzero()[:, 0], False),
        ):
            if rows.numel() == 0:
                continue
            part = _Part(
                src=src[rows],
                lengths=lengths[rows],
                max_lengths=max_lengths[rows],
                prefix=None if prefix is None else prefix[rows],
                constraints=None if constraints is None else constraints.select(rows),
            )
            if restrict:
                forced = part.prefix
                if part.constraints is not None:  # constraint pieces are always candidates
                    phrases = part.constraints.tokens.flatten(1)  # [b, C*L]
                    forced = phrases if forced is None else torch.cat([forced, phrases], dim=1)
                allowed = self.shortlist.allowed(part.src, prefix=forced, special=special)
            else:
                allowed = None
                log.debug("shortlist: %d sentences not covered: whole vocabulary", rows.numel())
            hyps = part.search(
                self.strategy,
                model,
                allowed,
                pad_id=pad_id,
                bos_id=bos_id,
                eos_id=eos_id,
                with_weights=with_weights,
            )
            for row, sentence in zip(rows.tolist(), hyps, strict=True):
                found[row] = sentence
        return found


@dataclass(frozen=True, slots=True)
class _Part:
    """Some sentences of a batch: source ids [b, S], lengths and caps [b], prefixes [b, P],
    constraints."""

    src: Tensor
    lengths: Tensor
    max_lengths: Tensor
    prefix: Tensor | None
    constraints: Constraints | None

    def search(
        self,
        strategy: SearchStrategy,
        model: Seq2Seq | Ensemble,
        allowed: Tensor | None,
        *,
        pad_id: int,
        bos_id: int,
        eos_id: int,
        with_weights: bool,
    ) -> list[list[Hypothesis]]:
        """Search each sentence over the target pieces ``allowed`` it [b, V]: over the union of
        theirs, the candidates, in their own numbering, each sentence's log p normalized over its
        own, the tokens mapped back to ids; or over the whole vocabulary when ``allowed`` is
        None."""
        if allowed is None:
            return strategy.search(
                model,
                self.src,
                self.lengths,
                max_lengths=self.max_lengths,
                pad_id=pad_id,
                bos_id=bos_id,
                eos_id=eos_id,
                with_weights=with_weights,
                prefix=self.prefix,
                constraints=self.constraints,
            )

        vocab = allowed.any(dim=0).nonzero()[:, 0]  # the candidates, ascending, [V']
        log.debug(
            "shortlist: %d of %d target pieces for %d sentences",
            vocab.numel(),
            allowed.size(1),
            allowed.size(0),
        )

        def number(ids: Tensor) -> Tensor:  # id -> its place among the candidates
            return torch.searchsorted(vocab, ids)

        own = allowed[:, vocab]  # [b, V']; all True for one sentence: nothing to mask

        found = strategy.search(
            _Restricted(model, model.shortlist_rows(vocab), None if bool(own.all()) else own),
            self.src,
            self.lengths,
            max_lengths=self.max_lengths,
            pad_id=int(number(torch.tensor(pad_id, device=vocab.device))),
            bos_id=int(number(torch.tensor(bos_id, device=vocab.device))),
            eos_id=int(number(torch.tensor(eos_id, device=vocab.device))),
            with_weights=with_weights,
            prefix=None if self.prefix is None else number(self.prefix),
            constraints=None if self.constraints is None else _renumber(self.constraints, vocab),
        )
        ids = vocab.tolist()
        return [
            [dataclasses.replace(hyp, tokens=[ids[i] for i in hyp.tokens]) for hyp in hyps]
            for hyps in found
        ]


def _renumber(constraints: Constraints, vocab: Tensor) -> Constraints:
    """``constraints`` over the candidates ``vocab`` [V'] (ascending), which hold every
    phrase's pieces."""
    glue = constraints.continues_word
    return dataclasses.replace(
        constraints,
        tokens=torch.searchsorted(vocab, constraints.tokens),
        continues_word=None if glue is None else glue[vocab],
    )


@dataclass(frozen=True, slots=True)
class _Restricted:
    """``model`` as a search sees it under a shortlist: its words are the candidates
    ``rows.ids`` [V'], word i being ``rows.ids[i]``, whose output rows were cut once; sentence
    b may produce those ``allowed[b]`` [b, V'] it, and its log p is normalized over them (None:
    every sentence may produce every candidate)."""

    model: Seq2Seq | Ensemble
    rows: ShortlistRows
    allowed: Tensor | None

    def encode(self, src: Tensor, lengths: Tensor) -> EncoderOutput:
        return self.model.encode(src, lengths)

    def init_state(self, encoder_out: EncoderOutput) -> DecoderState:
        state = self.model.init_state(encoder_out)
        return state if self.allowed is None else _SentenceCandidates.of(state, self.allowed)

    def decode_step(self, prev_tokens: Tensor, state: DecoderState) -> StepOutput:
        """One step from candidate numbers [N]: log p over the candidates, [N, V'], -inf at
        those that the row's sentence may not produce."""
        if not isinstance(state, _SentenceCandidates):  # no sentence's candidates to mask
            return self.model.decode_step(self.rows.ids[prev_tokens], state, shortlist=self.rows)
        step = self.model.decode_step(self.rows.ids[prev_tokens], state.inner, shortlist=self.rows)
        # log p over the batch's candidates renormalized over the sentence's own is the
        # softmax over the sentence's own: the sentence's translation is the same in any batch.
        log_probs = step.log_probs.masked_fill(~state.allowed, -math.inf).log_softmax(dim=-1)
        return StepOutput(
            log_probs=log_probs,
            state=_SentenceCandidates.of(step.state, state.allowed),
            weights=step.weights,
        )


@dataclass(frozen=True, slots=True)
class _SentenceCandidates(DecoderState):
    """The model's decoder state ``inner``, its rows carrying which candidates their sentence
    may produce, ``allowed`` [N, V'] bool; what a search reads of a state is ``inner``'s."""

    inner: DecoderState
    allowed: Tensor

    @classmethod
    def of(cls, inner: DecoderState, allowed: Tensor) -> _SentenceCandidates:
        return cls(
            hidden=inner.hidden,
            annotations=inner.annotations,
            keys=inner.keys,
            pad_mask=inner.pad_mask,
            prev_weights=inner.prev_weights,
            coverage=inner.coverage,
            inner=inner,
            allowed=allowed,
        )

    def advance(self, hidden: Tensor, weights: Tensor) -> DecoderState:
        """Not defined: the model advances ``inner`` in its own step (:class:`_Restricted`)."""
        raise TypeError("a shortlist's state advances in _Restricted.decode_step")

    def reorder(self, rows: Tensor) -> _SentenceCandidates:
        """``inner`` re-ordered within each sentence; the sentences' candidates stay."""
        return _SentenceCandidates.of(self.inner.reorder(rows), self.allowed)

    def select(self, index: Tensor) -> _SentenceCandidates:
        """Keep (and repeat) the rows in ``index`` [B'], candidates with them."""
        return _SentenceCandidates.of(self.inner.select(index), self.allowed.index_select(0, index))
