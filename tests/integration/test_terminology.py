"""Terminology on the tiny model that learned to reverse sequences: constraints it would never
produce appear in every hypothesis, phrases in order, with ensembles and n-best; a glossary
term lands where its source term is; the server gives what the file path gives."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import pytest

from nmtkit.checkpoint import load_model
from nmtkit.search import BeamSearch
from nmtkit.terminology import Term
from nmtkit.translation.translator import Translator
from tests.integration.learned import REVERSAL_GROUP, LearnedModel
from tests.toy_corpora import SYMBOLS

pytestmark = REVERSAL_GROUP


def translator(model: LearnedModel, **options) -> Translator:
    placement = options.pop("placement", "bonus")
    strategy = BeamSearch(BeamSearch.Config(beam_size=5, term_placement=placement))
    return Translator(load_model(model.path), strategy=strategy, precision="fp32", **options)


def cases(num: int, seed: int) -> list[tuple[str, list[str]]]:
    """Sources of 3 to 6 symbols from the first eight, and constraints from the last four,
    which no source holds: the learned model never writes them. Every third has a phrase of
    two symbols, every fifth a second phrase."""
    rng = random.Random(seed)
    first, last = SYMBOLS[:8], SYMBOLS[8:]
    found = []
    for number in range(num):
        source = " ".join(rng.choice(first) for _ in range(rng.randint(3, 6)))
        a, b, c = rng.sample(last, 3)
        phrases = [f"{a} {b}"] if number % 3 == 0 else [a]
        if number % 5 == 0:
            phrases.append(c)
        found.append((source, phrases))
    return found


def holds(text: str, phrase: str) -> bool:
    return f" {phrase} " in f" {text} "


def test_constraints_the_model_never_writes_are_in_every_hypothesis(
    reversal_model: LearnedModel,
) -> None:
    examples = cases(30, seed=11)
    sources = [source for source, _ in examples]
    plain = translator(reversal_model)
    free = [t.text for t in plain.translate(sources)]
    assert all(not holds(text, symbol) for text in free for symbol in SYMBOLS[8:])

    constrained = translator(reversal_model, nbest=5)
    terms = [tuple(Term(target=p) for p in phrases) for _, phrases in examples]
    for translation, (source, phrases) in zip(
        constrained.translate(sources, constraints=terms), examples, strict=True
    ):
        assert len(translation.candidates) == 5
        for candidate in translation.candidates:
            for phrase in phrases:  # a two-symbol phrase in its order, side by side
                assert holds(candidate.text, phrase), (source, phrases, candidate.text)
            assert all(use.met for use in candidate.terms)


def test_an_ensemble_follows_constraints(reversal_model: LearnedModel) -> None:
    loaded = load_model(reversal_model.path)
    ensemble = Translator(
        loaded,
        strategy=BeamSearch(BeamSearch.Config(beam_size=4)),
        precision="fp32",
        ensemble_with=[load_model(reversal_model.path)],
    )
    examples = cases(8, seed=12)
    terms = [tuple(Term(target=p) for p in phrases) for _, phrases in examples]
    found = ensemble.translate([s for s, _ in examples], constraints=terms)
    for translation, (_, phrases) in zip(found, examples, strict=True):
        assert all(holds(translation.text, phrase) for phrase in phrases)


def test_placement_by_attention_links_a_glossary_term_to_its_source_term(
    reversal_model: LearnedModel,
) -> None:
    """Glossary "c -> k" over sequences holding one c: every translation holds k, and with
    the attention bonus k is linked to c at least as often as when it is placed anywhere."""
    rng = random.Random(5)
    sources = []
    for _ in range(30):
        words = [rng.choice([s for s in SYMBOLS[:8] if s != "c"]) for _ in range(rng.randint(4, 8))]
        words[rng.randrange(len(words))] = "c"
        sources.append(" ".join(words))
    glossary = [Term(source="c", target="k")]

    def linked(how: str) -> int:
        found = translator(reversal_model, placement=how, with_alignment=True, terminology=glossary)
        count = 0
        for translation in found.translate(sources):
            (use,) = translation.candidates[0].terms
            assert use.met and holds(translation.text, "k")
            count += bool(use.aligned)
        return count

    assert linked("bonus") >= linked("none")


def test_the_server_gives_what_the_file_path_gives(
    reversal_model: LearnedModel, tmp_path: Path
) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from nmtkit.serving.app import build_app

    examples = cases(6, seed=13)
    sources = [s for s, _ in examples]
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("".join("\t".join(p) + "\n" for _, p in examples), "utf-8")
    source_file = tmp_path / "source.txt"
    source_file.write_text("".join(s + "\n" for s in sources), "utf-8")
    glossary = [Term(source=SYMBOLS[0], target=SYMBOLS[11])]
    files = translator(reversal_model, terminology=glossary)
    expected = [t.text for t in files.translate_stream(source_file, constraints_path=constraints)]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with TestClient(build_app(translator(reversal_model))) as client:
            response = client.post(
                "/translate",
                json={
                    "text": sources,
                    "constraints": [p for _, p in examples],
                    "terminology": [{"source": SYMBOLS[0], "target": SYMBOLS[11]}],
                },
            )
    assert response.status_code == 200, response.text
    got = [t["text"] for t in response.json()["translations"]]
    assert got == expected
    assert all(
        t["terms"] and all(u["met"] for u in t["terms"]) for t in response.json()["translations"]
    )
