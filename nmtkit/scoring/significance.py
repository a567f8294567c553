"""Paired significance tests of several systems against a baseline, through sacrebleu.

Paired bootstrap resampling (Koehn, 2004) and approximate randomization (Riezler and Maxwell,
2005) as ``sacrebleu --paired-bs`` / ``--paired-ar`` compute them, with the same defaults.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from nmtkit.errors import ConfigError, unknown_name
from nmtkit.files import check_line_counts
from nmtkit.scoring.metrics import build_metrics

log = logging.getLogger(__name__)

TESTS = ("bs", "ar")
DEFAULT_NUM_SAMPLES = {"bs": 1000, "ar": 10000}  # sacrebleu's --paired-bs-n, --paired-ar-n
DEFAULT_SEED = 12345  # sacrebleu's, when SACREBLEU_SEED is unset
THRESHOLD = 0.05  # p-values below it are marked '*', as sacrebleu does


@dataclass(frozen=True, kw_only=True, slots=True)
class SignificanceOptions:
    """Which paired test to run.

    Attributes:
        test: 'bs' (paired bootstrap resampling) or 'ar' (approximate randomization).
        num_samples: bootstrap resamples (bs) or shuffling trials (ar); None is sacrebleu's
            default, 1000 or 10000.
        seed: numpy seed; None draws one from the OS (not reproducible).
    """

    test: str = "bs"
    num_samples: int | None = None
    seed: int | None = DEFAULT_SEED


@dataclass(frozen=True, kw_only=True, slots=True)
class PairedResult:
    """One system's outcome on one metric.

    Attributes:
        score: the corpus score.
        mean: the mean score over bootstrap resamples (bs only; None for ar).
        ci: half the width of the 95% confidence interval around ``mean`` (bs only).
        p_value: the chance of a difference this large from the baseline under the null
            hypothesis; None for the baseline itself.
    """

    score: float
    mean: float | None = None
    ci: float | None = None
    p_value: float | None = None

    @property
    def significant(self) -> bool:
        """Whether the difference from the baseline is significant (p < 0.05)."""
        return self.p_value is not None and self.p_value < THRESHOLD


@dataclass(frozen=True, kw_only=True, slots=True)
class MetricTest:
    """The paired test on one metric: sacrebleu's signature and one result per system."""

    name: str
    signature: str
    results: tuple[PairedResult, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class SignificanceReport:
    """Paired tests of every system against the first one, the baseline."""

    test: str
    num_samples: int
    seed: int | None
    metrics: tuple[MetricTest, ...]

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        """Return a JSON-ready dict; ``names`` are the systems, baseline first."""
        return {
            "test": self.test,
            "num_samples": self.num_samples,
            "seed": self.seed,
            "threshold": THRESHOLD,
            "baseline": names[0],
            "metrics": [
                {
                    "name": item.name,
                    "signature": item.signature,
                    "results": [
                        {
                            "system": name,
                            "score": r.score,
                            "mean": r.mean,
                            "ci": r.ci,
                            "p_value": r.p_value,
                        }
                        for name, r in zip(names, item.results, strict=True)
                    ],
                }
                for item in self.metrics
            ],
        }


def check_significance_options(options: SignificanceOptions, *, num_systems: int) -> int:
    """Return the number of samples to draw; reject options sacrebleu would misread.

    Raises:
        ConfigError: an unknown test, fewer than 2 systems, a count or seed below 1.
    """
    if options.test not in TESTS:
        raise unknown_name("paired test", options.test, TESTS)
    if num_systems < 2:
        raise ConfigError(
            "a paired test needs two systems or more",
            hint="give the baseline first, then the systems to compare with it",
        )
    num_samples = options.num_samples
    if num_samples is None:
        num_samples = DEFAULT_NUM_SAMPLES[options.test]
    if num_samples < 1:
        raise ConfigError(f"the number of samples must be 1 or more, not {num_samples}")
    # sacrebleu treats seed 0 as "no seed" for the systems but not for the baseline.
    if options.seed is not None and options.seed < 1:
        raise ConfigError(f"the seed must be 1 or more, not {options.seed}")
    return num_samples


@contextlib.contextmanager
def _sacrebleu_seed(seed: int | None) -> Iterator[None]:
    # sacrebleu reads its seed only from this variable (when PairedTest is built).
    saved = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = "none" if seed is None else str(seed)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = saved


def paired_test(
    systems: Sequence[Sequence[str]],
    refs: Sequence[Sequence[str]],
    *,
    options: SignificanceOptions | None = None,
    metrics: Sequence[str] = ("bleu", "chrf", "ter"),
    lowercase: bool = False,
    tokenize: str | None = None,
) -> SignificanceReport:
    """Test every system against ``systems[0]`` as ``sacrebleu -i BASE SYS... --paired-*`` does.

    Args:
        systems: hypotheses of each system, baseline first; each as long as every reference.
        refs: reference streams.
        options: the test to run; sacrebleu's defaults (bootstrap, 1000 resamples) if None.
        metrics, lowercase, tokenize: as for :func:`nmtkit.scoring.metrics.score`.

    Raises:
        ConfigError: bad options (see :func:`check_significance_options`), unknown metric.
        DataError: a system or reference stream of another length.
    """
    from sacrebleu.significance import PairedTest

    options = options or SignificanceOptions()
    num_samples = check_significance_options(options, num_systems=len(systems))
    for number, hyps in enumerate(systems, start=1):
        for stream in refs:
            check_line_counts(f"system {number}", len(hyps), "a reference", len(stream))
    by_name = build_metrics(metrics, refs, lowercase=lowercase, tokenize=tokenize)
    named: list[tuple[str, Sequence[str]]] = [(str(i), hyps) for i, hyps in enumerate(systems)]
    log.info("paired %s test of %d systems, %d samples", options.test, len(systems), num_samples)
    with _sacrebleu_seed(options.seed):
        test = PairedTest(
            named, by_name, references=None, test_type=options.test, n_samples=num_samples
        )
        signatures, columns = test()
    # sacrebleu keys results by its own metric names ('chrF2'), in the order of ``by_name``.
    tests = tuple(
        MetricTest(
            name=name,
            signature=str(signature),
            results=tuple(_result(r) for r in columns[key]),
        )
        for name, (key, signature) in zip(by_name, signatures.items(), strict=True)
    )
    return SignificanceReport(
        test=options.test, num_samples=num_samples, seed=options.seed, metrics=tests
    )


def _optional(value: Any) -> float | None:
    return None if value is None else float(value)


def _result(result: Any) -> PairedResult:
    # sacrebleu's numbers may be numpy floats (TER); JSON wants Python floats.
    return PairedResult(
        score=float(result.score),
        mean=_optional(result.mean),
        ci=_optional(result.ci),
        p_value=_optional(result.p_value),
    )
