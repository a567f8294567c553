"""Learn a pair of directional aligners on a parallel text (and an ensemble of such pairs).

Training is unsupervised, like every statistical aligner's: both directions maximize the
likelihood of the text to be aligned (repeated ``repeat`` times, so that a small text weighs
against a large extra corpus) plus any extra parallel text. With ``agreement`` > 0, from epoch
``agreement_from`` on, each direction's lexicon learns from the two directions' posteriors
multiplied (Liang, Taskar & Klein, 2006, "Alignment by agreement"), which pushes the models
toward links both believe.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from nmtkit.alignment.neural.aligners import (
    AlignerEnsemble,
    AlignerPair,
    Pair,
    make_batches,
    to_tensors,
)
from nmtkit.alignment.neural.model import AlignerConfig, with_null
from nmtkit.alignment.neural.spelling import cooccurring_similarity
from nmtkit.alignment.neural.vocab import PAD, WordVocab
from nmtkit.console import progress
from nmtkit.errors import ConfigError, DataError

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class LearnConfig:
    """How the aligner pair is trained.

    Attributes:
        aligner: each direction's model.
        epochs: passes over the training text (the ``time_budget`` may stop sooner).
        time_budget: minutes of training at most; None for no limit.
        max_tokens: padded words per batch (the longer side).
        lr: Adam's learning rate, decayed linearly to 5 % of it over the planned updates.
        repeat: copies of the text to align among the training text.
        agreement: weight of the agreement target (0 trains the directions apart).
        agreement_from: the first epoch (counting from 1) trained for agreement.
        seed: makes the run repeatable.
        members: aligner pairs learned one after another (seeds seed, seed + 1, ...) by
            :func:`learn_ensemble`, whose posteriors are averaged; the time budget is shared.
    """

    aligner: AlignerConfig = field(default_factory=AlignerConfig)
    epochs: int = 5
    time_budget: float | None = None
    max_tokens: int = 2000
    lr: float = 3e-3
    repeat: int = 10
    agreement: float = 0.0
    agreement_from: int = 2
    seed: int = 1
    members: int = 4

    def __post_init__(self) -> None:
        counts = (self.epochs, self.max_tokens, self.repeat, self.agreement_from, self.members)
        if min(counts) < 1:
            raise ConfigError(
                "epochs, max_tokens, repeat, agreement_from and members must be positive"
            )
        if not self.lr > 0 or self.agreement < 0:
            raise ConfigError("lr must be positive and agreement at least 0")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ConfigError("the time budget must be positive minutes")


@dataclass(frozen=True, slots=True)
class LearnReport:
    updates: int
    epochs: float
    seconds: float
    loss: float


def agreement_targets(
    forward: torch.Tensor, reverse: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each direction's posteriors multiplied by the other's, renormalized.

    Args:
        forward: p(a_j = i), [B, J, I + 1]; reverse: p(a_i = j), [B, I, J + 1]; NULL at 0.

    Returns:
        The targets in the same shapes. A word is NULL-aligned in the product by its own model's
        NULL weight times the other model's chance that no word links to it.
    """
    both = forward[:, :, 1:] * reverse[:, :, 1:].transpose(1, 2)  # [B, J, I]
    unlinked_tgt = (1 - reverse[:, :, 1:].sum(1)).clamp(min=0)  # [B, J]
    unlinked_src = (1 - forward[:, :, 1:].sum(1)).clamp(min=0)  # [B, I]
    fwd = torch.cat([forward[:, :, :1] * unlinked_tgt[..., None], both], 2)
    rev = torch.cat([reverse[:, :, :1] * unlinked_src[..., None], both.transpose(1, 2)], 2)
    return (
        fwd / fwd.sum(-1, keepdim=True).clamp(min=1e-9),
        rev / rev.sum(-1, keepdim=True).clamp(min=1e-9),
    )


def learn(
    pairs: Sequence[Pair],
    config: LearnConfig,
    *,
    extra: Sequence[Pair] = (),
    on_epoch: Callable[[int, AlignerPair], None] | None = None,
    show_progress: bool = True,
) -> tuple[AlignerPair, LearnReport]:
    """Train both directions on ``pairs`` (repeated ``config.repeat`` times) plus ``extra``.

    Args:
        pairs: the text to align, tokenized.
        extra: more parallel text to learn from, tokenized.
        on_epoch: called after each full epoch (e.g. to score against gold in a benchmark).

    Raises:
        DataError: no pair with words on both sides.
    """
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    usable = [pair for pair in (*extra, *(list(pairs) * config.repeat)) if pair[0] and pair[1]]
    if not usable:
        raise DataError("nothing to learn from: no pair has words on both sides")
    src_vocab = WordVocab.build(src for src, _ in (*extra, *pairs))
    tgt_vocab = WordVocab.build(tgt for _, tgt in (*extra, *pairs))
    encoded = [(src_vocab.encode(src), tgt_vocab.encode(tgt)) for src, tgt in usable]
    spelling = None
    if config.aligner.spelling:
        distinct = [(src_vocab.encode(s), tgt_vocab.encode(t)) for s, t in (*extra, *pairs)]
        spelling = cooccurring_similarity(distinct, src_vocab.words, tgt_vocab.words)
        log.info("spelling: %d alike word pairs share a sentence pair", len(spelling[2]))
    aligners = AlignerPair(config.aligner, src_vocab, tgt_vocab, spelling)
    per_epoch = len(make_batches(encoded, config.max_tokens))
    planned = per_epoch * config.epochs
    params = aligners.parameters()
    optimizer = torch.optim.Adam(params, lr=config.lr)
    budget = None if config.time_budget is None else 60 * config.time_budget
    start = time.monotonic()

    def remaining(update: int) -> float:
        """The share of training left: of the planned updates, or of the time budget if less."""
        left = 1.0 - update / planned
        if budget is not None:
            left = min(left, 1.0 - (time.monotonic() - start) / budget)
        return max(0.05, left)

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, remaining)
    log.info(
        "learning to align: %d pairs (%d to align x %d, %d extra), vocabularies %d / %d words",
        len(encoded),
        len(pairs),
        config.repeat,
        len(extra),
        len(src_vocab),
        len(tgt_vocab),
    )
    deadline = None if budget is None else start + budget
    updates, loss_value = 0, math.nan
    aligners.train()
    with progress("loss", show=show_progress) as bar:
        task = bar.add_task("aligning", total=planned, loss="-")
        for epoch in range(1, config.epochs + 1):
            agree = config.agreement if epoch >= config.agreement_from else 0.0
            batches = make_batches(encoded, config.max_tokens)
            random.shuffle(batches)
            for batch in batches:
                loss = _batch_loss(aligners, *to_tensors(encoded, batch), agree)
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(params, 5.0)
                optimizer.step()
                schedule.step()
                updates += 1
                loss_value = loss.item()
                bar.update(task, advance=1, loss=f"{loss_value:.3f}")
                if deadline is not None and time.monotonic() > deadline:
                    break
            else:
                if on_epoch is not None:
                    on_epoch(epoch, aligners)
                    aligners.train()
                continue
            log.info("time budget of %s min reached in epoch %d", config.time_budget, epoch)
            break
    aligners.train(False)
    report = LearnReport(
        updates=updates,
        epochs=updates / per_epoch,
        seconds=time.monotonic() - start,
        loss=loss_value,
    )
    return aligners, report


def learn_ensemble(
    pairs: Sequence[Pair],
    config: LearnConfig,
    *,
    extra: Sequence[Pair] = (),
    show_progress: bool = True,
) -> tuple[AlignerEnsemble, list[LearnReport]]:
    """:func:`learn` ``config.members`` times, with seeds ``seed``, ``seed + 1``, ..., each
    within its share of the time budget.

    Raises:
        DataError: no pair with words on both sides.
    """
    budget = None if config.time_budget is None else config.time_budget / config.members
    members, reports = [], []
    for index in range(config.members):
        member_config = dataclasses.replace(
            config, seed=config.seed + index, time_budget=budget, members=1
        )
        if config.members > 1:
            log.info("aligner pair %d of %d", index + 1, config.members)
        pair, report = learn(pairs, member_config, extra=extra, show_progress=show_progress)
        members.append(pair)
        reports.append(report)
    return AlignerEnsemble(members), reports


def _batch_loss(
    aligners: AlignerPair, src: torch.Tensor, tgt: torch.Tensor, agree: float
) -> torch.Tensor:
    """Both directions' negative log-likelihood per target word; with ``agree`` > 0 each
    lexicon's gradient follows the agreement targets instead of its own posteriors."""
    forward = aligners.forward(with_null(src), tgt, posteriors=agree > 0)
    reverse = aligners.reverse(with_null(tgt), src, posteriors=agree > 0)
    tgt_words = (tgt != PAD).sum()
    src_words = (src != PAD).sum()
    loss = -forward.log_likelihood / tgt_words - reverse.log_likelihood / src_words
    if agree > 0:
        assert forward.posteriors is not None and reverse.posteriors is not None
        fwd_target, rev_target = agreement_targets(forward.posteriors, reverse.posteriors)
        # d(-log p)/d lexicon = -posterior; adding (posterior - target) . lexicon turns the
        # lexicon's gradient into -target (an EM step toward the agreed links).
        fwd_shift = (forward.posteriors - fwd_target) * (tgt != PAD)[:, :, None]
        rev_shift = (reverse.posteriors - rev_target) * (src != PAD)[:, :, None]
        loss = loss + agree * (fwd_shift * forward.lexicon).sum() / tgt_words
        loss = loss + agree * (rev_shift * reverse.lexicon).sum() / src_words
    return loss


__all__ = [
    "LearnConfig",
    "LearnReport",
    "agreement_targets",
    "learn",
    "learn_ensemble",
]
