"""Validation during training: loss under teacher forcing and BLEU of greedy translations (or of
another search, for choosing its settings)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from nmtkit.config import ComponentSpec, Config, SearchConfig
from nmtkit.data.text import TextPipeline
from nmtkit.models import Seq2Seq
from nmtkit.registry import get
from nmtkit.runtime import autocast
from nmtkit.scoring.metrics import MetricScore, corpus_bleu
from nmtkit.search.decode import build_strategy, decode_sequences
from nmtkit.training.data import ParallelSplit, TrainingData

log = logging.getLogger(__name__)


def validation_nll(
    model: Seq2Seq,
    valid: ParallelSplit,
    *,
    max_tokens: int,
    max_sentences: int | None = None,
    precision: str = "fp32",
) -> float:
    """Mean negative log-likelihood per target token (EOS included) under teacher forcing."""
    model.eval()
    total, tokens = 0.0, 0
    device = next(model.parameters()).device
    with torch.inference_mode(), autocast(precision, device):
        for indices in valid.batches(max_tokens=max_tokens, max_sentences=max_sentences):
            batch = valid.batch(indices).to(device)
            _, nll = model.loss(batch)
            total += float(nll)
            tokens += batch.num_tgt_tokens
    return total / max(tokens, 1)


def validation_translations(
    model: Seq2Seq,
    valid: ParallelSplit,
    tgt_text: TextPipeline,
    search: SearchConfig,
    *,
    strategy: ComponentSpec | None = None,
) -> list[str]:
    """Detokenized translations of the validation sources: greedy, or by ``strategy`` (with
    the output caps, batches and precision of ``search``)."""
    if strategy is None:
        strategy = ComponentSpec(name="greedy", options=get("search", "greedy").Config())
    hyps = decode_sequences(
        model,
        [valid.src[i].tolist() for i in range(len(valid))],
        build_strategy(strategy),
        batch_size=search.batch_size,
        max_len_a=search.max_len_a,
        max_len_b=search.max_len_b,
        precision=search.precision,
    )
    return [tgt_text.decode(h[0].tokens) if h else "" for h in hyps]


def validation_bleu(
    model: Seq2Seq,
    valid: ParallelSplit,
    refs: list[str],
    tgt_text: TextPipeline,
    search: SearchConfig,
) -> MetricScore:
    """Detokenized sacreBLEU of greedy translations of the validation sources."""
    return corpus_bleu(validation_translations(model, valid, tgt_text, search), refs)


@dataclass(frozen=True, slots=True)
class ValidationScores:
    """One validation: the mean NLL per target token and the BLEU of greedy translations."""

    nll: float
    bleu: MetricScore


def validation_scores(model: Seq2Seq, data: TrainingData, config: Config) -> ValidationScores:
    """Score ``model`` on ``data``'s validation split (it must have one): the loss in the
    training precision and batches, the BLEU with the search settings of ``config``."""
    valid = data.valid
    assert valid is not None
    nll = validation_nll(
        model,
        valid,
        max_tokens=config.train.max_tokens,
        max_sentences=config.train.max_sentences,
        precision=config.train.precision,
    )
    bleu = validation_bleu(model, valid, data.valid_refs, data.tgt_text, config.search)
    return ValidationScores(nll=nll, bleu=bleu)
