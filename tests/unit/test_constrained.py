"""Lexically constrained beam search on a random tiny model: the best hypothesis holds its
sentence's phrases (multi-piece ones in order), a sentence without phrases is searched as plain
beam search searches it, and the allocation goes round the banks. (tests/integration/
test_terminology.py checks a model that has learned its task.)"""

from __future__ import annotations

import pytest
import torch

from nmtkit.data.batching import collate_source
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.errors import ConfigError
from nmtkit.registry import Constraints
from nmtkit.search import BeamSearch, GreedySearch, SamplingSearch
from nmtkit.search.constrained import (
    ConstrainedChoice,
    Phrase,
    Placement,
    _allocation_order,
    _drop_repeats,
    constraints_of,
)
from tests.unit.test_models import random_ids, tiny_model
from tests.unit.test_search import run


def beam(size: int = 5, placement: str = "bonus") -> BeamSearch:
    return BeamSearch(BeamSearch.Config(beam_size=size, term_placement=placement))


def holds(tokens: list[int], phrase: tuple[int, ...]) -> bool:
    width = len(phrase)
    return any(tuple(tokens[i : i + width]) == phrase for i in range(len(tokens) - width + 1))


@pytest.mark.parametrize("placement", ["none", "bonus", "gate"])
def test_every_hypothesis_holds_its_phrases_in_order(placement: str) -> None:
    model = tiny_model()
    src_ids = random_ids([5, 7, 4, 6, 8, 3], seed=3)
    phrases = [
        [Phrase(ids=(7,)), Phrase(ids=(9, 10, 11), source=(1,))],
        [],
        [Phrase(ids=(12, 12), source=(0, 1))],
        [Phrase(ids=(8,)), Phrase(ids=(13,)), Phrase(ids=(14,))],
        [Phrase(ids=(5, 6))],
        [],
    ]
    src_len = max(len(ids) for ids in src_ids) + 1
    constraints = constraints_of(phrases, src_len=src_len)
    found = run(beam(placement=placement), model, src_ids, max_len=12, constraints=constraints)
    for sentence, hyps in zip(phrases, found, strict=True):
        assert len(hyps) == 5
        met = [all(holds(hyp.tokens, p.ids) for p in sentence) for hyp in hyps]
        # The best holds them all; a random model's search may end at the cap before five do,
        # and those that do not come last.
        assert met[0], (hyps[0].tokens, sentence)
        assert met == sorted(met, reverse=True)


def test_without_phrases_it_is_plain_beam_search() -> None:
    model = tiny_model()
    src_ids = random_ids([5, 7, 4, 6, 8], seed=4)
    src_len = max(len(ids) for ids in src_ids) + 1
    none_met = Constraints(
        tokens=torch.zeros(5, 2, 3, dtype=torch.long),
        lengths=torch.zeros(5, 2, dtype=torch.long),
        sources=torch.zeros(5, 2, src_len, dtype=torch.bool),
    )
    plain = run(beam(), model, src_ids, max_len=12)
    constrained = run(beam(), model, src_ids, max_len=12, constraints=none_met)
    for expected, got in zip(plain, constrained, strict=True):
        assert [h.tokens for h in got] == [h.tokens for h in expected]
        assert [h.score for h in got] == pytest.approx([h.score for h in expected])


def test_scores_are_the_models_own() -> None:
    """Constraints change which hypotheses are found, not how one is scored: a constrained
    hypothesis's score is the plain search's score of the same words forced as a prefix."""
    model = tiny_model()
    src_ids = random_ids([6], seed=5)
    constraints = constraints_of([[Phrase(ids=(9, 10))]], src_len=len(src_ids[0]) + 1)
    ((best, *_),) = run(beam(placement="none"), model, src_ids, max_len=12, constraints=constraints)
    src, lengths = collate_source(src_ids)
    ((forced, *_),) = beam().search(
        model,
        src,
        lengths,
        max_lengths=torch.tensor([len(best.tokens)]),
        pad_id=PAD_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        prefix=torch.tensor([best.tokens]),
    )
    assert forced.tokens == best.tokens
    assert forced.log_prob == pytest.approx(best.log_prob, abs=1e-4)


def test_a_phrase_that_cannot_fit_ends_unmet_at_the_cap() -> None:
    model = tiny_model()
    src_ids = random_ids([6, 5], seed=6)
    long = Phrase(ids=(5, 6, 7, 8))
    constraints = constraints_of([[long], []], src_len=max(map(len, src_ids)) + 1)
    found = run(beam(), model, src_ids, max_len=3, constraints=constraints)
    assert found[0], "a sentence whose phrases cannot fit still gets translations"
    assert all(len(h.tokens) <= 3 for h in found[0])
    assert found[1]


def test_other_strategies_refuse_constraints() -> None:
    model = tiny_model()
    src_ids = random_ids([4], seed=7)
    constraints = constraints_of([[Phrase(ids=(5,))]], src_len=len(src_ids[0]) + 1)
    for strategy in (
        GreedySearch(GreedySearch.Config()),
        SamplingSearch(SamplingSearch.Config()),
    ):
        with pytest.raises(ConfigError, match="beam search"):
            run(strategy, model, src_ids, max_len=12, constraints=constraints)


def test_unknown_placement_is_refused() -> None:
    with pytest.raises(ConfigError, match="term_placement"):
        BeamSearch.Config(term_placement="somewhere")


def test_allocation_goes_round_the_banks_fullest_first() -> None:
    rank = torch.tensor([[-1.0, -2.0, -3.0, -4.0, -5.0, float("-inf")]])
    bank = torch.tensor([[0, 0, 1, 2, 2, 2]])
    order = _allocation_order(rank, bank, most=2)
    # the best of bank 2, of bank 1, of bank 0; then the second best of bank 2 and of bank 0
    assert order.tolist() == [[3, 2, 0, 4, 1, 5]]


def test_repeated_candidates_count_once() -> None:
    totals = torch.tensor([[-1.0, -2.0, -1.0, -3.0]])
    keys = torch.tensor([[4, 7, 4, 9]])
    kept = _drop_repeats(totals, keys)
    assert torch.isfinite(kept).sum() == 3
    assert kept[0, 1] == -2.0 and kept[0, 3] == -3.0


def test_a_phrase_left_half_way_loses_its_pieces() -> None:
    phrases = constraints_of([[Phrase(ids=(5, 6, 7)), Phrase(ids=(9,))]], src_len=4)
    assert phrases is not None
    choice = ConstrainedChoice(phrases, 1, placement=Placement(how="none"))
    rows = torch.zeros(5, dtype=torch.long)
    state = choice.state
    tokens, lengths = phrases.tokens[rows], phrases.lengths[rows]

    after, started = choice._advance(state, torch.tensor([0]), torch.tensor([5]), tokens, lengths)
    assert after.current.tolist() == [0] and after.depth.tolist() == [1]
    assert started.tolist() == [0]
    on, _ = choice._advance(after, torch.tensor([0]), torch.tensor([6]), tokens, lengths)
    assert on.current.tolist() == [0] and on.depth.tolist() == [2]
    left, _ = choice._advance(on, torch.tensor([0]), torch.tensor([8]), tokens, lengths)
    assert left.current.tolist() == [-1] and left.depth.tolist() == [0]
    assert not left.met.any()
    switched, started = choice._advance(on, torch.tensor([0]), torch.tensor([9]), tokens, lengths)
    assert switched.met.tolist() == [[False, True]] and switched.current.tolist() == [-1]
    assert started.tolist() == [1]
    done, _ = choice._advance(on, torch.tensor([0]), torch.tensor([7]), tokens, lengths)
    assert done.met.tolist() == [[True, False]] and done.current.tolist() == [-1]
