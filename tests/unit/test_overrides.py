"""Search overrides: translate's flags turn a model's search into the one asked for."""

from __future__ import annotations

import pytest

from nmtkit.config import ComponentSpec
from nmtkit.errors import ConfigError
from nmtkit.search import BeamSearch, GreedySearch, SamplingSearch
from nmtkit.search.overrides import (
    SearchOverrides,
    describe_search,
    max_hypotheses,
    resolve_search,
)

BEAM = ComponentSpec(name="beam", options=BeamSearch.Config(beam_size=6, length_penalty=0.6))
GREEDY = ComponentSpec(name="greedy", options=GreedySearch.Config())
SAMPLING = ComponentSpec(name="sampling", options=SamplingSearch.Config(num_samples=4, top_k=9))


def test_no_overrides_keep_the_model_search() -> None:
    for spec in (BEAM, GREEDY, SAMPLING):
        assert resolve_search(spec, SearchOverrides(), nbest=1) == spec


def test_a_beam_of_one_is_greedy_search() -> None:
    assert resolve_search(BEAM, SearchOverrides(beam=1), nbest=1).name == "greedy"
    assert resolve_search(SAMPLING, SearchOverrides(greedy=True), nbest=1).name == "greedy"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            SearchOverrides(beam=1, length_penalty=0.0),
            BeamSearch.Config(beam_size=1, length_penalty=0.0),
        ),
        (
            SearchOverrides(beam=1, coverage_penalty=0.2),
            BeamSearch.Config(beam_size=1, length_penalty=0.6, coverage_penalty=0.2),
        ),
        (
            SearchOverrides(beam=1, early_stopping=False),
            BeamSearch.Config(beam_size=1, length_penalty=0.6, early_stopping=False),
        ),
    ],
)
def test_a_beam_of_one_with_beam_options_is_a_beam_search_keeping_them(
    overrides: SearchOverrides, expected: BeamSearch.Config
) -> None:
    assert resolve_search(BEAM, overrides, nbest=1) == ComponentSpec(name="beam", options=expected)


@pytest.mark.parametrize(
    ("spec", "overrides", "expected"),
    [
        (BEAM, SearchOverrides(beam=8), BeamSearch.Config(beam_size=8, length_penalty=0.6)),
        (GREEDY, SearchOverrides(coverage_penalty=0.2), BeamSearch.Config(coverage_penalty=0.2)),
        (
            BEAM,
            SearchOverrides(early_stopping=False),
            BeamSearch.Config(beam_size=6, length_penalty=0.6, early_stopping=False),
        ),
        (SAMPLING, SearchOverrides(beam=3), BeamSearch.Config(beam_size=3)),
    ],
)
def test_beam_options_switch_to_beam_search_keeping_the_model_ones(
    spec: ComponentSpec, overrides: SearchOverrides, expected: BeamSearch.Config
) -> None:
    assert resolve_search(spec, overrides, nbest=1) == ComponentSpec(name="beam", options=expected)


@pytest.mark.parametrize(
    ("spec", "overrides", "nbest", "expected"),
    [
        (BEAM, SearchOverrides(sampling=True), 1, SamplingSearch.Config()),
        (
            BEAM,
            SearchOverrides(sampling=True, top_p=0.9, seed=3),
            5,
            SamplingSearch.Config(top_p=0.9, seed=3, num_samples=5),
        ),
        (
            SAMPLING,
            SearchOverrides(temperature=0.5),
            2,
            SamplingSearch.Config(num_samples=4, top_k=9, temperature=0.5),
        ),
    ],
)
def test_sampling_takes_its_options_and_at_least_nbest_samples(
    spec: ComponentSpec, overrides: SearchOverrides, nbest: int, expected: SamplingSearch.Config
) -> None:
    found = resolve_search(spec, overrides, nbest=nbest)
    assert found == ComponentSpec(name="sampling", options=expected)
    assert max_hypotheses(found) >= nbest


def test_a_seed_without_sampling_changes_nothing() -> None:
    assert resolve_search(BEAM, SearchOverrides(seed=5), nbest=1) == BEAM


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        (SearchOverrides(beam=0), "--beam"),
        (SearchOverrides(sampling=True, beam=1), "--sampling"),
        (SearchOverrides(sampling=True, coverage_penalty=0.1), "--sampling"),
        (SearchOverrides(top_k=5), "need --sampling"),
        (SearchOverrides(sampling=True, top_p=2.0), "top_p"),
        (SearchOverrides(coverage_penalty=-0.5), "coverage_penalty"),
        (SearchOverrides(greedy=True, length_penalty=0.6), "--greedy cannot"),
        (SearchOverrides(greedy=True, beam=4), "--greedy cannot"),
        (SearchOverrides(sampling=True, greedy=True), "--sampling"),
    ],
)
def test_conflicting_or_bad_overrides_are_config_errors(
    overrides: SearchOverrides, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment):
        resolve_search(BEAM, overrides, nbest=1)


def test_the_search_is_described_with_its_options() -> None:
    assert max_hypotheses(BEAM) == 6 and max_hypotheses(GREEDY) == 1
    assert describe_search(GREEDY) == "greedy"
    assert describe_search(BEAM).startswith("beam (beam_size=6, length_penalty=0.6,")


def test_the_decode_signature_names_the_resolved_precision() -> None:
    assert describe_search(GREEDY, precision="fp32") == "greedy precision=fp32"
    assert describe_search(BEAM, precision="bf16").endswith(") precision=bf16")
