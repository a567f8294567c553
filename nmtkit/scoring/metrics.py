"""Corpus scores through sacrebleu (BLEU, chrF, TER), identical to the ``sacrebleu`` command.

Options mirror the sacrebleu CLI: ``lowercase`` (``-lc``) and ``tokenize`` (``-tok``) reach BLEU
only; chrF stays case-sensitive and TER case-insensitive with its own tercom tokenizer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nmtkit.errors import ConfigError, DataError, unknown_name
from nmtkit.files import check_line_counts, read_lines

if TYPE_CHECKING:
    from sacrebleu.metrics.base import Metric

log = logging.getLogger(__name__)

# A line looks Moses-tokenized if it has a space before ',' or '.', an escaped entity, an
# aggregated hyphen or a split English clitic. French text has a space before '!?:;', so those
# don't count.
_TOKENIZED = re.compile(
    r"\s[,.](?=\s|$)|&(?:apos|quot|amp|lt|gt);|\s@[-,./]@\s|\w\s(?:'(?:s|re|ll|ve|m|d)|n't)\b"
)
_TOKENIZED_SHARE = 0.3
_SUBWORD_MARKS = ("\u2581", "@@ ")


@dataclass(frozen=True, kw_only=True, slots=True)
class MetricScore:
    """One corpus-level score.

    Attributes:
        name: 'BLEU', 'chrF' or 'TER'.
        score: the number sacrebleu reports (TER: lower is better).
        text: sacrebleu's own line, e.g. 'BLEU = 34.12 65.1/41.0/27.9/19.3 (BP = ...)'.
        signature: sacrebleu's reproducibility signature, e.g. 'nrefs:1|case:mixed|...'.
    """

    name: str
    score: float
    text: str
    signature: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ScoreReport:
    """The scores of one hypothesis file, with warnings about its form."""

    scores: tuple[MetricScore, ...]
    num_sentences: int
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (for ``--json``)."""
        return {
            "num_sentences": self.num_sentences,
            "scores": [
                {"name": s.name, "score": s.score, "text": s.text, "signature": s.signature}
                for s in self.scores
            ],
            "warnings": list(self.warnings),
        }


def _bleu(lowercase: bool, tokenize: str | None, refs: Sequence[Sequence[str]]) -> Metric:
    from sacrebleu.metrics import BLEU

    # force=True only silences sacrebleu's own "tokenized period" log line; our warning covers it.
    try:
        return BLEU(lowercase=lowercase, tokenize=tokenize, force=True, references=refs)
    except (ImportError, RuntimeError) as exc:
        # A tokenizer whose extra is missing: mecab ones raise RuntimeError, spm ones ImportError.
        reason = " ".join(str(exc).split())
        raise ConfigError(f"tokenizer {tokenize!r} cannot be used: {reason}") from None
    except SystemExit:
        # sacrebleu exits when an spm/flores tokenizer cannot download its model.
        raise ConfigError(
            f"tokenizer {tokenize!r} could not download its model",
            hint="run once with network access; sacrebleu caches it in ~/.sacrebleu",
        ) from None


def _chrf(lowercase: bool, tokenize: str | None, refs: Sequence[Sequence[str]]) -> Metric:
    from sacrebleu.metrics import CHRF

    # The sacrebleu CLI never passes -lc/-tok to chrF (only --chrf-lowercase, default off).
    return CHRF(references=refs)


def _ter(lowercase: bool, tokenize: str | None, refs: Sequence[Sequence[str]]) -> Metric:
    from sacrebleu.metrics import TER

    # The sacrebleu CLI never passes -lc/-tok to TER, which is case-insensitive by default.
    return TER(references=refs)


# name -> (display name, builder(lowercase, tokenize, refs)); built lazily, as sacrebleu does.
_METRICS: dict[str, tuple[str, Callable[[bool, str | None, Sequence[Sequence[str]]], Metric]]] = {
    "bleu": ("BLEU", _bleu),
    "chrf": ("chrF", _chrf),
    "ter": ("TER", _ter),
}


def check_options(metrics: Sequence[str], tokenize: str | None) -> tuple[str, ...]:
    """Return the metric keys ('bleu', 'chrf', 'ter') in order, without repeats.

    Raises:
        ConfigError: an unknown metric or tokenizer, or no metric at all.
    """
    keys: list[str] = []
    for name in metrics:
        key = name.lower()
        if key not in _METRICS:
            raise unknown_name("metric", name, _METRICS)
        if key not in keys:
            keys.append(key)
    if not keys:
        raise ConfigError("no metric chosen", hint=f"choose from {', '.join(_METRICS)}")
    if tokenize is not None:
        from sacrebleu.metrics import BLEU

        if tokenize not in BLEU.TOKENIZERS:
            raise unknown_name("tokenizer", tokenize, BLEU.TOKENIZERS)
    return tuple(keys)


def _check_counts(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> None:
    if isinstance(refs, str) or any(isinstance(stream, str) for stream in refs):
        raise TypeError("refs is a sequence of reference streams, e.g. [ref_lines]")
    if not refs:
        raise DataError("no reference given")
    if not hyps:
        raise DataError("nothing to score: there are no hypotheses")
    for number, stream in enumerate(refs, start=1):
        if len(stream) != len(hyps):
            raise DataError(
                f"reference stream {number} has {len(stream)} lines "
                f"but there are {len(hyps)} hypotheses"
            )


def find_warnings(hyps: Sequence[str]) -> tuple[str, ...]:
    """Return warnings about hypotheses that look tokenized or still hold subword marks."""
    warnings: list[str] = []
    lines = [h for h in hyps if h.strip()]
    num_tokenized = sum(1 for h in lines if _TOKENIZED.search(h))
    if lines and num_tokenized / len(lines) > _TOKENIZED_SHARE:
        warnings.append(
            f"{num_tokenized} of {len(lines)} hypotheses look tokenized (e.g. ' ,' ' .' '&apos;'); "
            "scores on tokenized text are not comparable, detokenize first"
        )
    num_marked = sum(1 for h in lines if any(m in h for m in _SUBWORD_MARKS) or h.endswith("@@"))
    if num_marked:
        warnings.append(
            f"{num_marked} of {len(lines)} hypotheses hold subword marks ('\u2581' or '@@ '); "
            "decode the subwords before scoring"
        )
    return tuple(warnings)


def score(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    *,
    metrics: Sequence[str] = ("bleu", "chrf", "ter"),
    lowercase: bool = False,
    tokenize: str | None = None,
) -> ScoreReport:
    """Score detokenized hypotheses against one or more reference streams.

    Args:
        hyps: one hypothesis per sentence.
        refs: reference streams, each as long as ``hyps``.
        metrics: names among 'bleu', 'chrf', 'ter' (any case), reported in this order.
        lowercase: case-insensitive BLEU (sacrebleu ``-lc``); chrF and TER ignore it, as the
            CLI does (chrF stays case-sensitive, TER case-insensitive).
        tokenize: BLEU tokenizer (sacrebleu ``-tok``); None is sacrebleu's default, '13a'.

    Raises:
        ConfigError: an unknown metric or tokenizer.
        DataError: no hypotheses, or a reference stream of another length.
    """
    keys = check_options(metrics, tokenize)
    _check_counts(hyps, refs)
    scores = tuple(
        _score_one(key, hyps, refs, lowercase=lowercase, tokenize=tokenize) for key in keys
    )
    report = ScoreReport(scores=scores, num_sentences=len(hyps), warnings=find_warnings(hyps))
    log.debug("scored %d sentences: %s", report.num_sentences, [s.text for s in scores])
    return report


def build_metrics(
    metrics: Sequence[str],
    refs: Sequence[Sequence[str]],
    *,
    lowercase: bool = False,
    tokenize: str | None = None,
) -> dict[str, Metric]:
    """Return sacrebleu metrics by display name ('BLEU', 'chrF', 'TER'), references cached.

    They are built the way :func:`score` and the sacrebleu command build them (``lowercase``
    and ``tokenize`` reach BLEU only), for code that drives sacrebleu itself (paired tests).

    Raises:
        ConfigError: an unknown metric or tokenizer.
    """
    keys = check_options(metrics, tokenize)
    return {_METRICS[key][0]: _METRICS[key][1](lowercase, tokenize, refs) for key in keys}


def _score_one(
    key: str,
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    *,
    lowercase: bool,
    tokenize: str | None,
) -> MetricScore:
    name, build = _METRICS[key]
    # Like the sacrebleu CLI: references are cached at construction, then scored with None.
    metric = build(lowercase, tokenize, refs)
    result = metric.corpus_score(list(hyps), None)
    return MetricScore(
        name=name,
        score=float(result.score),
        text=str(result),
        signature=str(metric.get_signature()),
    )


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str]) -> MetricScore:
    """Return corpus BLEU with sacrebleu's defaults against one reference stream (validation BLEU).

    Raises:
        DataError: no hypotheses, or ``refs`` of another length.
    """
    _check_counts(hyps, [refs])
    return _score_one("bleu", hyps, [refs], lowercase=False, tokenize=None)


def read_stream(path: str | Path) -> list[str]:
    """Read a hypothesis or reference file ('-' for stdin) as the sacrebleu command does.

    Raises:
        DataError: the file is missing or unreadable, or a line is not valid UTF-8.
    """
    # The sacrebleu CLI strips all trailing whitespace from every line; so do we.
    # read_lines yields None only with skip_invalid, which is off here.
    return [line.rstrip() for line in read_lines(path) if line is not None]


def score_files(
    hyp_path: str | Path,
    ref_paths: Sequence[str | Path],
    *,
    metrics: Sequence[str] = ("bleu", "chrf", "ter"),
    lowercase: bool = False,
    tokenize: str | None = None,
) -> ScoreReport:
    """Score a hypothesis file ('-' for stdin) against reference files, as ``sacrebleu`` does.

    Options are those of :func:`score`.

    Raises:
        ConfigError: an unknown metric or tokenizer.
        DataError: an unreadable file, or files with different line counts.
    """
    check_options(metrics, tokenize)
    if not ref_paths:
        raise DataError("no reference file given")
    hyps = read_stream(hyp_path)
    refs = []
    for ref_path in ref_paths:
        stream = read_stream(ref_path)
        check_line_counts(
            hyp_path,
            len(hyps),
            ref_path,
            len(stream),
            hint="hypotheses and references must be line-parallel",
        )
        refs.append(stream)
    return score(hyps, refs, metrics=metrics, lowercase=lowercase, tokenize=tokenize)
