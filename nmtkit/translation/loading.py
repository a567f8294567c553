"""Open a translator from model paths: load the models (an ensemble when several), resolve
the search overrides, and open the model directory's shortlist when asked."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import torch

from nmtkit.checkpoint import load_model
from nmtkit.errors import ConfigError
from nmtkit.runtime import tune_allocator
from nmtkit.search.decode import build_strategy
from nmtkit.search.ensemble import check_vocabularies
from nmtkit.search.length_policy import LengthPolicy
from nmtkit.search.overrides import (
    SearchOverrides,
    describe_search,
    max_hypotheses,
    resolve_search,
)
from nmtkit.shortlist.builder import open_shortlist
from nmtkit.terminology.glossary import Term
from nmtkit.translation.options import check_options
from nmtkit.translation.splitting import check_splitting
from nmtkit.translation.translator import Translator

log = logging.getLogger(__name__)


def open_translator(
    model_path: str | Path | Sequence[str | Path],
    *,
    search: SearchOverrides | None = None,
    batch_size: int | None = None,
    max_len_a: float | None = None,
    max_len_b: int | None = None,
    nbest: int = 1,
    with_alignment: bool = False,
    device: str = "cpu",
    threads: int | None = None,
    precision: str | None = None,
    lengths: LengthPolicy | None = None,
    split_sentences: bool = False,
    shortlist: bool = False,
    terminology: Sequence[Term] = (),
    workers: int | None = None,
) -> Translator:
    """Load a model and set up its translator; None keeps the model's own search settings.

    ``model_path`` is one model (a directory or a checkpoint file) or a sequence of them, which
    translate as an ensemble (``ensemble_with`` of :class:`Translator`): the first model's
    text pipelines, search settings and shortlist serve them all.

    ``shortlist`` restricts the output words to the vocabulary shortlist in the (first) model's
    directory (:func:`nmtkit.shortlist.builder.open_shortlist`). ``terminology`` is a glossary
    every translation follows (``terminology`` of :class:`Translator`). ``workers`` batches
    are searched side by side, sharing ``threads`` (``workers`` of :class:`Translator`; None:
    its default).

    Raises:
        CheckpointError: a path holds no usable checkpoint.
        DataError: ``shortlist`` and the model's directory has no usable shortlist for it.
        ConfigError: no model path, models of different vocabularies, ``nbest`` above the
            beam size or number of samples (or above 1 with ``split_sentences``), a batch size
            or a number of workers below 1, a negative output cap, or search overrides that
            conflict or are out of range (:func:`resolve_search`), or ``terminology`` with a
            search other than beam search of a beam of 2 or more.
    """
    paths = [model_path] if isinstance(model_path, str | Path) else list(model_path)
    if not paths:
        raise ConfigError("no model to translate with", hint="give one with --model")
    check_options(batch_size=batch_size, max_len_a=max_len_a, max_len_b=max_len_b, workers=workers)
    check_splitting(split_sentences=split_sentences, nbest=nbest)  # before the model loads
    if threads:
        torch.set_num_threads(threads)
    tune_allocator()
    loaded, *others = [load_model(path, device=device) for path in paths]
    if others:  # before the shortlist is opened: a mismatch is the first thing to report
        check_vocabularies(
            [member.vocab.fingerprint for member in (loaded, *others)],
            names=[str(member.path) for member in (loaded, *others)],
        )
    spec = resolve_search(loaded.config.search.strategy, search or SearchOverrides(), nbest=nbest)
    width = max_hypotheses(spec)
    if nbest < 1 or nbest > width:
        raise ConfigError(
            f"--nbest must be between 1 and the beam size or number of samples ({width}), "
            f"got {nbest}"
        )
    translator = Translator(
        loaded,
        strategy=build_strategy(spec),
        batch_size=batch_size,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        nbest=nbest,
        with_alignment=with_alignment,
        precision=precision,
        lengths=lengths,
        split_sentences=split_sentences,
        shortlist=open_shortlist(loaded) if shortlist else None,
        ensemble_with=others,
        terminology=terminology,
        workers=workers,
    )
    if others:
        names = ", ".join(str(member.path) for member in translator.members)
        log.info("ensemble of %d models: %s", len(translator.members), names)
    log.info("search: %s", describe_search(spec, precision=translator.precision))
    return translator
