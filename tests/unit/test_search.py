"""Search invariants: beam 1 equals greedy, batching changes nothing, beam finds the best."""

from __future__ import annotations

import itertools

import pytest
import torch

from nmtkit.data.batching import collate, collate_source
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.registry import get
from nmtkit.search import BeamSearch, GreedySearch
from tests.unit.test_models import random_ids, tiny_model


def run(strategy, model, src_ids, *, max_len=8, with_weights=False):
    src, lengths = collate_source(src_ids)
    return strategy.search(
        model,
        src,
        lengths,
        max_lengths=torch.full((len(src_ids),), max_len),
        pad_id=PAD_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        with_weights=with_weights,
    )


def beam(size: int, alpha: float = 1.0) -> BeamSearch:
    return BeamSearch(BeamSearch.Config(beam_size=size, length_penalty=alpha))


def sharp_model(seed: int = 0):
    """A random model with large weights, so that its distributions are far from uniform."""
    return tiny_model("model.init_scale=0.5", seed=seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_of_one_equals_greedy(seed: int) -> None:
    model = sharp_model(seed)
    src = random_ids([5, 9, 3, 7], seed=seed)
    greedy = run(GreedySearch(GreedySearch.Config()), model, src)
    beamed = run(beam(1), model, src)
    for g, b in zip(greedy, beamed, strict=True):
        assert g[0].tokens == b[0].tokens
        assert g[0].log_prob == pytest.approx(b[0].log_prob, abs=1e-4)


@pytest.mark.parametrize("strategy", [GreedySearch(GreedySearch.Config()), beam(4)])
def test_translation_does_not_depend_on_the_batch(strategy) -> None:
    model = sharp_model()
    src = random_ids([4, 11, 6, 2, 9], seed=5)
    together = run(strategy, model, src, with_weights=True)
    for i, ids in enumerate(src):
        alone = run(strategy, model, [ids], with_weights=True)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in together[i]]
        assert alone[0].score == pytest.approx(together[i][0].score, abs=1e-4)
        s = len(ids) + 1
        assert torch.allclose(alone[0].weights[:, :s], together[i][0].weights[:, :s], atol=1e-4)


def sequence_log_prob(model, src_ids: list[int], tokens: list[int]) -> float:
    batch = collate([src_ids], [tokens], [0])
    logits, _ = model(batch)
    log_probs = logits.log_softmax(-1)
    return float(log_probs.gather(1, batch.tgt_out[0][:, None]).sum())


def test_beam_finds_the_best_hypothesis_found_by_enumeration() -> None:
    """With a beam wider than the search space, beam search is exhaustive."""
    model = tiny_model("model.init_scale=0.8", seed=3)
    vocab = model.decoder.output.out_features
    words = [w for w in range(vocab) if w not in (EOS_ID, PAD_ID, BOS_ID)]
    src = random_ids([4], seed=2)[0]
    max_len = 2
    best_score, best = float("-inf"), None
    with torch.no_grad():
        for length in range(max_len + 1):
            for tokens in itertools.product(words, repeat=length):
                score = sequence_log_prob(model, src, list(tokens)) / (length + 1)
                if score > best_score:
                    best_score, best = score, list(tokens)
        found = run(beam(64), model, [src], max_len=max_len)[0][0]
    assert found.tokens == best
    assert found.score == pytest.approx(best_score, abs=1e-4)


def test_beam_returns_up_to_k_hypotheses_best_first() -> None:
    model = sharp_model()
    hyps = run(beam(5), model, random_ids([6], seed=1))[0]
    assert 1 <= len(hyps) <= 5
    scores = [h.score for h in hyps]
    assert scores == sorted(scores, reverse=True)


def test_outputs_respect_the_length_cap() -> None:
    model = sharp_model()
    for strategy in (GreedySearch(GreedySearch.Config()), beam(3)):
        for hyps in run(strategy, model, random_ids([3, 8], seed=4), max_len=4):
            assert all(len(h.tokens) <= 4 for h in hyps)


def test_search_strategies_are_registered() -> None:
    assert get("search", "beam") is BeamSearch
    assert get("search", "greedy") is GreedySearch
