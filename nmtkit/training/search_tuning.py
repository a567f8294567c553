"""The beam's length penalty chosen on the validation set when training ends, and written into
the model's config, so that ``translate`` uses it by default (as Marian's and OpenNMT-py's users
tune ``--normalize`` and ``-alpha`` by hand on a dev set), but only where the gain is more than
the validation set's noise.

Only the length penalty is searched: the beam size trades speed for quality, which is the
user's call (``search.strategy.beam_size``), and the penalty's best value moves with the model
(how long its outputs run), which is why it is chosen per model."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nmtkit import checkpoint as ckpt
from nmtkit.config import ComponentSpec, Config
from nmtkit.scoring.metrics import corpus_bleu
from nmtkit.scoring.significance import THRESHOLD, paired_test
from nmtkit.training.data import TrainingData
from nmtkit.training.model_dir import write_config
from nmtkit.training.validation import validation_translations

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class TunedSearch:
    """The validation BLEU of each length penalty tried, the best of them, the paired
    bootstrap's p-value of the best against the configured one, and the one chosen: the best
    where that difference is significant (p < 0.05), else the configured one."""

    bleu: dict[float, float]
    configured: float
    best: float
    p_value: float | None  # None when the configured one is the best
    chosen: float
    seconds: float


def tunes_search(config: Config) -> bool:
    """Whether training ends by choosing the length penalty: a beam search and a grid."""
    return config.search.strategy.name == "beam" and bool(config.train.tune_length_penalties)


def tune_length_penalty(
    model_path: Path,
    data: TrainingData,
    config: Config,
    *,
    stop: Callable[[], bool] = lambda: False,
) -> TunedSearch | None:
    """Translate ``data``'s validation set with the checkpoint at ``model_path`` at each of
    ``train.tune_length_penalties`` (and the configured penalty), and choose one
    (:class:`TunedSearch`); None if ``stop`` says so between two of them (a stop signal).

    A penalty replaces the configured one only when paired bootstrap resampling (Koehn, 2004)
    finds it significantly better on the validation set: a gain within the noise of about a
    thousand sentences does not carry over to other sets (docs/quality.md)."""
    assert data.valid is not None
    loaded = ckpt.load_model(model_path)
    spec = config.search.strategy
    configured = float(spec.options.length_penalty)
    grid = sorted({configured, *config.train.tune_length_penalties})
    started = time.monotonic()
    outputs: dict[float, list[str]] = {}
    bleu: dict[float, float] = {}
    for alpha in grid:
        if stop():
            return None
        strategy = with_length_penalty(config, alpha).search.strategy
        outputs[alpha] = validation_translations(
            loaded.model, data.valid, data.tgt_text, config.search, strategy=strategy
        )
        bleu[alpha] = corpus_bleu(outputs[alpha], data.valid_refs).score
        log.info(
            "length penalty %g: validation BLEU %.2f (beam %d)",
            alpha,
            bleu[alpha],
            strategy.options.beam_size,
        )
    best = max(grid, key=lambda alpha: (bleu[alpha], alpha == configured))
    p_value = None
    if best != configured:
        report = paired_test(
            [outputs[configured], outputs[best]], [data.valid_refs], metrics=("bleu",)
        )
        p_value = report.metrics[0].results[1].p_value
    significant = p_value is not None and p_value < THRESHOLD
    return TunedSearch(
        bleu=bleu,
        configured=configured,
        best=best,
        p_value=p_value,
        chosen=best if significant else configured,
        seconds=time.monotonic() - started,
    )


def with_length_penalty(config: Config, alpha: float) -> Config:
    """``config`` with the beam's length penalty ``alpha``."""
    spec = config.search.strategy
    options = dataclasses.replace(spec.options, length_penalty=alpha)
    search = dataclasses.replace(
        config.search, strategy=ComponentSpec(name=spec.name, options=options)
    )
    return dataclasses.replace(config, search=search)


def store_search(model_dir: Path, config: Config) -> None:
    """Write ``config``'s search settings into the model directory's checkpoints (``best.pt``
    and ``last.pt``, atomically, weights untouched) and its ``config.yaml``."""
    for name in (ckpt.BEST, ckpt.LAST):
        path = model_dir / name
        if path.is_file():
            payload = ckpt.load_checked(path)
            payload["config"]["search"] = config.to_dict()["search"]
            ckpt.save_checked(path, payload)
    write_config(model_dir, config)
