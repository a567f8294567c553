"""Ensembles: several models of one vocabulary searched as one model, by the same search code.

At every step each member predicts from its own state, and the ensemble's next-word
distribution is the mean of the members' probabilities (linear interpolation, as fairseq's
``EnsembleModel``): log p(y | ...) = log((1/N) sum_m p_m(y | ...)), so it stays a distribution
that sums to 1 and beam scores, sampling and n-best ranks mean what they mean for one model.
Attention weights (for alignments and the coverage penalty) are the mean of the members'.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import torch
from torch import Tensor, nn

from nmtkit.errors import ConfigError
from nmtkit.models import Seq2Seq
from nmtkit.registry import Batch, DecoderState, EncoderOutput, ShortlistRows, StepOutput


@dataclass(frozen=True, slots=True)
class EnsembleEncoding(EncoderOutput):
    """Every member's encoder output, ``members[m]`` for model m; the inherited fields are the
    first member's (the search never reads them: it hands this value back to ``init_state``)."""

    members: tuple[EncoderOutput, ...]


@dataclass(frozen=True, slots=True)
class EnsembleState(DecoderState):
    """Every member's decoder state, ``members[m]`` for model m, re-indexed together.

    What a search reads of a state is the ensemble's: ``pad_mask`` (shared: every member reads
    the same source ids), and ``prev_weights`` and ``coverage``, the means of the members'
    (so the coverage penalty sees the averaged attention). ``hidden``, ``annotations`` and
    ``keys`` are the first member's, since each member reads only its own state.
    """

    members: tuple[DecoderState, ...]

    @classmethod
    def of(cls, members: Sequence[DecoderState]) -> EnsembleState:
        """Bundle the members' states (of the same rows)."""
        first = members[0]
        return cls(
            hidden=first.hidden,
            annotations=first.annotations,
            keys=first.keys,
            pad_mask=first.pad_mask,
            prev_weights=mean([state.prev_weights for state in members]),
            coverage=mean([state.coverage for state in members]),
            members=tuple(members),
        )

    def advance(self, hidden: Tensor, weights: Tensor) -> DecoderState:
        """Not defined for a bundle: each member advances its own state in its own step
        (:meth:`Ensemble.decode_step`), which bundles the results anew."""
        raise TypeError("an ensemble's state advances member by member, in Ensemble.decode_step")

    def reorder(self, rows: Tensor) -> EnsembleState:
        """Re-order the hypotheses of each sentence in every member's state (``rows`` [B]: a
        row of the same sentence for every row, :meth:`DecoderState.reorder`)."""
        return EnsembleState.of([state.reorder(rows) for state in self.members])

    def select(self, index: Tensor) -> EnsembleState:
        """Keep (and repeat) the rows in ``index`` [B'] of every member's state."""
        return EnsembleState.of([state.select(index) for state in self.members])


@dataclass(frozen=True, slots=True, kw_only=True)
class EnsembleRows(ShortlistRows):
    """A shortlist's rows of every member's output layer, ``members[m]`` for model m; the
    inherited ``weight`` and ``bias`` are None (each member reads only its own)."""

    members: tuple[ShortlistRows, ...]


class Ensemble(nn.Module):
    """Models of one vocabulary as one :class:`~nmtkit.registry.Translatable`: each member
    encodes and decodes on its own, and every step's log-probabilities are those of the mean
    of the members' probabilities (the module docstring says why).

    The members may differ in anything but the vocabulary (layers, sizes, attention, encoder),
    which :func:`check_vocabularies` checks. It is a module so that ``eval()``, ``parameters()``
    and ``to()`` reach every member.
    """

    def __init__(self, models: Sequence[Seq2Seq]) -> None:
        super().__init__()
        assert len(models) >= 2, "an ensemble has at least two models"
        self.members = nn.ModuleList(models)

    def models(self) -> list[Seq2Seq]:
        """The members, in order."""
        return cast(list[Seq2Seq], list(self.members))

    def encode(self, src: Tensor, lengths: Tensor) -> EnsembleEncoding:
        """Each member's encoding of source ids [B, S] of real lengths [B]."""
        outs = tuple(model.encode(src, lengths) for model in self.models())
        first = outs[0]
        return EnsembleEncoding(first.annotations, first.pad_mask, first.summary, members=outs)

    def init_state(self, encoder_out: EncoderOutput) -> EnsembleState:
        """Each member's s_0, from the encodings :meth:`encode` returned."""
        assert isinstance(encoder_out, EnsembleEncoding), "decode what Ensemble.encode returned"
        return EnsembleState.of(
            [
                model.init_state(out)
                for model, out in zip(self.models(), encoder_out.members, strict=True)
            ]
        )

    def shortlist_rows(self, ids: Tensor) -> EnsembleRows:
        """Every member's rows of the candidates ``ids`` [V'] (:meth:`Seq2Seq.shortlist_rows`)."""
        return EnsembleRows(ids=ids, members=tuple(m.shortlist_rows(ids) for m in self.models()))

    def decode_step(
        self, prev_tokens: Tensor, state: DecoderState, *, shortlist: ShortlistRows | None = None
    ) -> StepOutput:
        """One step of every member from y_{i-1} [B]: log of the mean probability [B, V]
        (or [B, V'] over the candidates of ``shortlist``, from :meth:`shortlist_rows`), the
        members' new states, and the mean attention weights [B, S]."""
        assert isinstance(state, EnsembleState), "decode from what Ensemble.init_state returned"
        assert shortlist is None or isinstance(shortlist, EnsembleRows), "see shortlist_rows"
        rows = [None] * len(state.members) if shortlist is None else shortlist.members
        steps = [
            model.decode_step(prev_tokens, member, shortlist=member_rows)
            for model, member, member_rows in zip(self.models(), state.members, rows, strict=True)
        ]
        return StepOutput(
            log_probs=mean_probability([step.log_probs for step in steps]),
            state=EnsembleState.of([step.state for step in steps]),
            weights=mean([step.weights for step in steps]),
        )

    def force_decode(self, batch: Batch) -> Tensor:
        """The mean of the members' teacher-forced attention weights [B, T, S]."""
        return mean([model.force_decode(batch) for model in self.models()])

    def force_decode_blocks(self, batch: Batch, *, block: int) -> Iterator[Tensor]:
        """The mean of the members' weights, ``block`` target steps at a time [B, <=block, S]."""
        members = [model.force_decode_blocks(batch, block=block) for model in self.models()]
        for blocks in zip(*members, strict=True):
            yield mean(blocks)


def mean_probability(log_probs: Sequence[Tensor]) -> Tensor:
    """log((1/N) sum_m exp(log_probs[m])) of N log-probability tensors of one shape, in float32:
    the log of the mean probability (-inf only where every member gives -inf)."""
    stacked = torch.stack([lp.float() for lp in log_probs])  # [N, ...]
    return torch.logsumexp(stacked, dim=0) - math.log(len(log_probs))


def mean(tensors: Sequence[Tensor]) -> Tensor:
    """The element-wise mean of tensors of one shape."""
    return torch.stack(list(tensors)).mean(dim=0)


def check_vocabularies(fingerprints: Sequence[str], *, names: Sequence[str]) -> None:
    """Require every model of an ensemble to have the first one's vocabulary.

    Args:
        fingerprints: each model's vocabulary fingerprint
            (:attr:`nmtkit.checkpoint.Vocabulary.fingerprint`).
        names: each model's name (its path), for the message.

    Raises:
        ConfigError: a model's vocabulary differs from the first's, naming both models.
    """
    for fingerprint, name in zip(fingerprints[1:], names[1:], strict=True):
        if fingerprint != fingerprints[0]:
            raise ConfigError(
                f"models {names[0]} and {name} have different vocabularies, so they cannot be "
                "ensembled",
                hint="ensemble models trained on the same data dir (the same SentencePiece models)",
            )
