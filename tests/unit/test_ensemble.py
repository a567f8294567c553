"""Ensembles: a model with itself is the model; two models step by the log of their mean
probability through every search; the state moves every member; one vocabulary only."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import torch

from nmtkit.data.batching import collate, collate_source
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.errors import ConfigError
from nmtkit.search.ensemble import Ensemble, EnsembleState, check_vocabularies, mean_probability
from tests.unit.test_models import random_ids, tiny_model
from tests.unit.test_search import beam, gnmt_lp, greedy, run, sampling

STRATEGIES = [
    pytest.param(lambda: beam(4), id="beam"),
    pytest.param(lambda: beam(3, 0.6, beta=0.4, early_stopping=False), id="beam-cp"),
    pytest.param(greedy, id="greedy"),
    pytest.param(lambda: sampling(num_samples=3, top_k=6, seed=2), id="sampling"),
]


def pair(*overrides: str) -> tuple[torch.nn.Module, torch.nn.Module]:
    """Two different tiny models of one vocabulary, with distributions far from uniform."""
    return (
        tiny_model("model.init_scale=0.5", *overrides, seed=0),
        tiny_model("model.init_scale=0.5", *overrides, seed=1),
    )


def token_log_probs(model, src_ids: list[int], outputs: list[list[int]]) -> list[torch.Tensor]:
    """Each output's teacher-forced log p of every word (EOS included), [len + 1] each."""
    batch = collate([src_ids] * len(outputs), outputs, list(range(len(outputs))))
    with torch.no_grad():
        logits, _ = model(batch)  # [N, V], real positions sentence by sentence
    targets = batch.tgt_out[batch.tgt_out != PAD_ID]
    flat = logits.log_softmax(-1).gather(1, targets[:, None]).squeeze(1)
    return list(flat.split([len(tokens) + 1 for tokens in outputs]))


def ensemble_log_prob(models, src_ids: list[int], outputs: list[list[int]]) -> list[float]:
    """log p of each output under the ensemble, by hand: per word, log of the mean of the
    members' probabilities, summed."""
    per_model = [token_log_probs(model, src_ids, outputs) for model in models]
    return [
        float((torch.stack(words).exp().mean(dim=0)).log().sum())
        for words in zip(*per_model, strict=True)
    ]


@pytest.mark.parametrize("make", STRATEGIES)
def test_an_ensemble_of_a_model_with_itself_finds_what_the_model_finds(make) -> None:
    model = tiny_model("model.init_scale=0.5", seed=4)
    src = random_ids([5, 9, 3, 7], seed=1)
    alone = run(make(), model, src, with_weights=True)
    doubled = run(make(), Ensemble([model, model]), src, with_weights=True)
    for mine, ours in zip(alone, doubled, strict=True):
        assert [h.tokens for h in mine] == [h.tokens for h in ours]
        for h, g in zip(mine, ours, strict=True):
            assert h.score == pytest.approx(g.score, abs=1e-5)
            assert h.log_prob == pytest.approx(g.log_prob, abs=1e-5)
            assert torch.allclose(h.weights, g.weights, atol=1e-6)


def test_each_step_is_the_log_of_the_mean_probability_and_the_mean_attention() -> None:
    first, second = pair()
    ensemble = Ensemble([first, second])
    src, lengths = collate_source(random_ids([6, 4], seed=3))
    with torch.no_grad():
        state = ensemble.init_state(ensemble.encode(src, lengths))
        states = [m.init_state(m.encode(src, lengths)) for m in (first, second)]
        prev = torch.full((2,), BOS_ID)
        for words in ([7, 9], [5, 5], [11, 4]):
            step = ensemble.decode_step(prev, state)
            steps = [m.decode_step(prev, s) for m, s in zip((first, second), states, strict=True)]
            probs = (steps[0].log_probs.exp() + steps[1].log_probs.exp()) / 2
            assert torch.allclose(step.log_probs, probs.log(), atol=1e-6)
            assert torch.allclose(step.log_probs.exp().sum(-1), torch.ones(2), atol=1e-5)
            weights = (steps[0].weights + steps[1].weights) / 2
            assert torch.allclose(step.weights, weights, atol=1e-7)
            coverage = (steps[0].state.coverage + steps[1].state.coverage) / 2
            assert torch.allclose(step.state.coverage, coverage, atol=1e-6)
            prev = torch.tensor(words)
            state, states = step.state, [s.state for s in steps]


@pytest.mark.parametrize("make", STRATEGIES)
def test_two_models_run_through_every_strategy_with_prefixes_and_weights(make) -> None:
    first, second = pair()
    src = random_ids([5, 9, 3], seed=2)
    found = run(make(), Ensemble([first, second]), src, with_weights=True, prefixes=[[6], [], []])
    for ids, hyps in zip(src, found, strict=True):
        assert hyps
        for hyp in hyps:
            assert all(word not in (PAD_ID, BOS_ID, EOS_ID) for word in hyp.tokens)
            assert hyp.weights.shape == (len(hyp.tokens) + 1, max(len(s) for s in src) + 1)
            rows = hyp.weights[:, : len(ids) + 1].sum(dim=-1)
            assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)
            (by_hand,) = ensemble_log_prob((first, second), ids, [hyp.tokens])
            assert hyp.log_prob == pytest.approx(by_hand, abs=1e-4)
    assert all(h.tokens[:1] == [6] for h in found[0])


def test_beam_over_an_ensemble_finds_the_best_hypothesis_found_by_enumeration() -> None:
    """A beam wider than the search space is exhaustive under the averaged distribution."""
    first, second = (
        tiny_model("model.init_scale=0.8", seed=3),
        tiny_model("model.init_scale=0.8", seed=5),
    )
    src = random_ids([4], seed=2)[0]
    vocab = first.decoder.output.out_features
    words = [w for w in range(vocab) if w not in (PAD_ID, BOS_ID, EOS_ID)]
    outputs = [list(t) for n in range(3) for t in itertools.product(words, repeat=n)]
    log_probs = ensemble_log_prob((first, second), src, outputs)
    scores = [lp / gnmt_lp(len(t) + 1, 1.0) for t, lp in zip(outputs, log_probs, strict=True)]
    best_score = max(scores)
    best = outputs[scores.index(best_score)]
    found = run(beam(64), Ensemble([first, second]), [src], max_len=2)[0][0]
    assert found.tokens == best
    assert found.score == pytest.approx(best_score, abs=1e-4)


def test_a_shortlist_restricts_every_member_and_the_mean_is_over_the_candidates() -> None:
    first, second = pair()
    ensemble = Ensemble([first, second])
    vocab = torch.tensor([0, 1, 2, 3, 5, 8, 13])
    src, lengths = collate_source(random_ids([5], seed=6))
    prev = torch.full((1,), BOS_ID)
    with torch.no_grad():
        step = ensemble.decode_step(
            prev,
            ensemble.init_state(ensemble.encode(src, lengths)),
            shortlist=ensemble.shortlist_rows(vocab),
        )
        each = [
            m.decode_step(
                prev, m.init_state(m.encode(src, lengths)), shortlist=m.shortlist_rows(vocab)
            ).log_probs
            for m in (first, second)
        ]
    assert step.log_probs.shape == (1, vocab.numel())
    assert torch.allclose(step.log_probs, mean_probability(each), atol=1e-7)


def test_force_decode_averages_the_members_attention() -> None:
    first, second = pair()
    batch = collate(random_ids([5, 3], seed=1), random_ids([4, 6], seed=2), [0, 1])
    with torch.no_grad():
        averaged = Ensemble([first, second]).force_decode(batch)
        by_hand = (first.force_decode(batch) + second.force_decode(batch)) / 2
    assert torch.allclose(averaged, by_hand, atol=1e-7)


def test_the_state_selects_and_reorders_every_member_alike() -> None:
    first, second = pair("model.attention=general")
    ensemble = Ensemble([first, second])
    src, lengths = collate_source(random_ids([5, 3], seed=4))
    with torch.no_grad():
        state = ensemble.init_state(ensemble.encode(src, lengths)).select(torch.tensor([0, 0, 1]))
        state = ensemble.decode_step(torch.tensor([5, 6, 7]), state).state
    assert isinstance(state, EnsembleState)
    for moved in (state.select(torch.tensor([2, 0])), state.reorder(torch.tensor([1, 0, 2]))):
        index = torch.tensor([2, 0]) if moved.hidden.size(0) == 2 else torch.tensor([1, 0, 2])
        for member, original in zip(moved.members, state.members, strict=True):
            assert torch.equal(member.hidden, original.hidden[index])
            assert torch.equal(member.coverage, original.coverage[index])
        assert torch.equal(moved.coverage, state.coverage[index])
        assert torch.equal(moved.pad_mask, state.pad_mask[index])
    with pytest.raises(TypeError, match="member by member"):
        state.advance(state.hidden, state.prev_weights)


def test_models_of_different_vocabularies_cannot_be_ensembled() -> None:
    check_vocabularies(["abc", "abc", "abc"], names=["a", "b", "c"])
    with pytest.raises(ConfigError) as caught:
        check_vocabularies(["abc", "abc", "xyz"], names=["one/best.pt", "two", "three/best.pt"])
    message = str(caught.value)
    assert "one/best.pt" in message and "three/best.pt" in message and "\n" not in message


def test_the_log_of_the_mean_probability_of_one_value_is_that_value() -> None:
    log_probs = torch.tensor([[-0.5, -1.5, float("-inf")]])
    assert torch.equal(mean_probability([log_probs, log_probs]).isinf(), log_probs.isinf())
    mixed = mean_probability([log_probs, torch.tensor([[-2.0, -0.1, -3.0]])])
    assert float(mixed[0, 2]) == pytest.approx(math.log(math.exp(-3.0) / 2))


def test_an_ensemble_state_is_a_decoder_state_with_members() -> None:
    fields = {field.name for field in dataclasses.fields(EnsembleState)}
    assert fields >= {"hidden", "pad_mask", "coverage", "prev_weights", "members"}
