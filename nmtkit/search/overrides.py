"""Search overrides: how ``translate``'s flags (--beam, --sampling, ...) change the search a
model was configured with."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from nmtkit import registry
from nmtkit.config import ComponentSpec
from nmtkit.errors import ConfigError


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchOverrides:
    """Changes to a model's own search settings; None keeps the model's.

    Attributes:
        beam: beam size K; 1 alone means greedy search, 1 with another beam option a beam of 1.
        length_penalty, coverage_penalty: alpha and beta of beam search's GNMT score.
        early_stopping: False keeps a sentence's beam going while a live hypothesis can win.
        term_placement: how constrained beam search places a glossary term
            (:mod:`nmtkit.search.constrained`).
        greedy: greedy search; no beam option may come with it.
        sampling: sample translations (``nmtkit.search.SamplingSearch``) instead of searching.
        temperature, top_k, top_p, seed: the sampling options.
    """

    beam: int | None = None
    length_penalty: float | None = None
    coverage_penalty: float | None = None
    early_stopping: bool | None = None
    term_placement: str | None = None
    greedy: bool = False
    sampling: bool = False
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    def beam_options(self) -> dict[str, Any]:
        """The beam search options that are set, by ``BeamSearch.Config`` field."""
        options = {
            "beam_size": self.beam,
            "length_penalty": self.length_penalty,
            "coverage_penalty": self.coverage_penalty,
            "early_stopping": self.early_stopping,
            "term_placement": self.term_placement,
        }
        return {key: value for key, value in options.items() if value is not None}

    def sampling_options(self) -> dict[str, Any]:
        """The sampling options that are set (``seed`` aside), by ``SamplingSearch.Config``
        field."""
        options = {"temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p}
        return {key: value for key, value in options.items() if value is not None}


def resolve_search(spec: ComponentSpec, overrides: SearchOverrides, *, nbest: int) -> ComponentSpec:
    """The search that ``overrides`` make of a model's own ``spec``.

    Beam options switch to beam search, even of a beam of 1; ``greedy``, or a beam of 1 with no
    other beam option, switches to greedy search (the same words as a beam of 1 with early
    stopping, scored log p / length instead). ``sampling`` switches to sampling, with at least
    ``nbest`` samples per sentence. A model that samples keeps sampling with the sampling
    options applied.

    Raises:
        ConfigError: sampling or greedy together with beam options, sampling and greedy,
            sampling options without sampling, or an option out of its range.
    """
    beam_options, sampling_options = overrides.beam_options(), overrides.sampling_options()
    if overrides.beam is not None and overrides.beam < 1:
        raise ConfigError(f"--beam must be at least 1, got {overrides.beam}")
    if overrides.sampling and (beam_options or overrides.greedy):
        raise ConfigError(
            "--sampling cannot be combined with --beam, --greedy, --length-penalty, "
            "--coverage-penalty, --early-stop/--no-early-stop or --term-placement"
        )
    if overrides.greedy and beam_options:
        raise ConfigError(
            "--greedy cannot be combined with --beam, --length-penalty, --coverage-penalty, "
            "--early-stop/--no-early-stop or --term-placement",
            hint="for a beam of 1 with beam options, give --beam 1 instead of --greedy",
        )
    searches = beam_options or overrides.greedy
    samples = overrides.sampling or (spec.name == "sampling" and not searches)
    if sampling_options and not samples:
        raise ConfigError("--temperature, --top-k and --top-p need --sampling")
    if samples:
        if overrides.seed is not None:
            sampling_options["seed"] = overrides.seed
        return _replace_options(spec, "sampling", sampling_options, at_least={"num_samples": nbest})
    if overrides.greedy or beam_options == {"beam_size": 1}:
        return ComponentSpec(name="greedy", options=registry.get("search", "greedy").Config())
    if beam_options:
        return _replace_options(spec, "beam", beam_options, at_least={})
    return spec


def _replace_options(
    spec: ComponentSpec, name: str, changes: dict[str, Any], *, at_least: dict[str, int]
) -> ComponentSpec:
    """Strategy ``name`` with ``spec``'s options if it is that strategy (else the defaults),
    ``changes`` applied and the ``at_least`` fields raised to those values."""
    options = spec.options if spec.name == name else registry.get("search", name).Config()
    for key, value in at_least.items():
        changes[key] = max(value, getattr(options, key))
    return ComponentSpec(name=name, options=dataclasses.replace(options, **changes))


def max_hypotheses(spec: ComponentSpec) -> int:
    """The most hypotheses per sentence that ``spec``'s search returns: its beam size or
    number of samples (1 for a strategy with neither)."""
    return int(getattr(spec.options, "beam_size", getattr(spec.options, "num_samples", 1)))


def describe_search(spec: ComponentSpec, *, precision: str | None = None) -> str:
    """The decode signature in one line: the strategy, its options and, when given, the
    resolved precision (``fp32`` or ``bf16``, never ``auto``), e.g.
    'beam (beam_size=5, length_penalty=1.0) precision=bf16'."""
    assert precision != "auto", "describe the resolved precision"
    options = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(spec.options).items())
    described = f"{spec.name} ({options})" if options else spec.name
    return described if precision is None else f"{described} precision={precision}"
