"""Search invariants: beam 1 equals greedy, batching changes nothing, beam finds the best,
penalties score as GNMT says, prefixes are kept."""

from __future__ import annotations

import itertools
import math
from functools import partial

import pytest
import torch

from nmtkit.data.batching import collate, collate_source, pad
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.errors import ConfigError
from nmtkit.registry import get, names
from nmtkit.search import BeamSearch, GreedySearch, SamplingSearch
from tests.unit.test_models import random_ids, tiny_model


def run(
    strategy, model, src_ids, *, max_len=8, with_weights=False, prefixes=None, constraints=None
):
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
        prefix=None if prefixes is None else pad(prefixes),
        constraints=constraints,
    )


def beam(
    size: int, alpha: float = 1.0, *, beta: float = 0.0, early_stopping: bool = True
) -> BeamSearch:
    config = BeamSearch.Config(
        beam_size=size, length_penalty=alpha, coverage_penalty=beta, early_stopping=early_stopping
    )
    return BeamSearch(config)


def greedy() -> GreedySearch:
    return GreedySearch(GreedySearch.Config())


def sampling(**options) -> SamplingSearch:
    return SamplingSearch(SamplingSearch.Config(**options))


def gnmt_lp(length: int, alpha: float) -> float:
    """Wu et al. (2016), eq. 14; ``length`` counts EOS."""
    return ((5 + length) / 6) ** alpha


def sharp_model(seed: int = 0):
    """A random model with large weights, so that its distributions are far from uniform."""
    return tiny_model("model.init_scale=0.5", seed=seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_of_one_equals_greedy(seed: int) -> None:
    model = sharp_model(seed)
    src = random_ids([5, 9, 3, 7], seed=seed)
    greedy_found = run(greedy(), model, src)
    beamed = run(beam(1), model, src)
    for g, b in zip(greedy_found, beamed, strict=True):
        assert g[0].tokens == b[0].tokens
        assert g[0].log_prob == pytest.approx(b[0].log_prob, abs=1e-4)


def default_strategy(name: str):
    cls = get("search", name)
    return cls(cls.Config())


BATCH_CASES = [
    *[pytest.param(partial(default_strategy, name), id=name) for name in names("search")],
    pytest.param(partial(beam, 4, beta=0.4, early_stopping=False), id="beam-cp-no-early-stop"),
    pytest.param(partial(sampling, num_samples=3, top_k=5, top_p=0.9, seed=4), id="sampling-n"),
]


@pytest.mark.parametrize("make", BATCH_CASES)
@pytest.mark.parametrize("with_prefix", [False, True])
def test_translation_does_not_depend_on_the_batch(make, with_prefix: bool) -> None:
    strategy = make()
    model = sharp_model()
    src = random_ids([4, 11, 6, 2, 9], seed=5)
    prefixes = [[5, 6], [], [7], [], [8, 9, 10]] if with_prefix else None
    together = run(strategy, model, src, with_weights=True, prefixes=prefixes)
    for i, ids in enumerate(src):
        mine = None if prefixes is None else [prefixes[i]]
        alone = run(strategy, model, [ids], with_weights=True, prefixes=mine)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in together[i]]
        assert alone[0].score == pytest.approx(together[i][0].score, abs=1e-4)
        s = len(ids) + 1
        assert torch.allclose(alone[0].weights[:, :s], together[i][0].weights[:, :s], atol=1e-4)


def sequence_log_prob(model, src_ids: list[int], tokens: list[int]) -> float:
    batch = collate([src_ids], [tokens], [0])
    logits, _ = model(batch)
    log_probs = logits.log_softmax(-1)
    return float(log_probs.gather(1, batch.tgt_out[0][:, None]).sum())


def every_log_prob(model, src_ids: list[int], max_len: int) -> list[tuple[list[int], float]]:
    """Every output of at most ``max_len`` words (UNK included) with its log p, in one batch."""
    vocab = model.decoder.output.out_features
    words = [w for w in range(vocab) if w not in (EOS_ID, PAD_ID, BOS_ID)]
    outputs = [
        list(tokens)
        for length in range(max_len + 1)
        for tokens in itertools.product(words, repeat=length)
    ]
    batch = collate([src_ids] * len(outputs), outputs, list(range(len(outputs))))
    with torch.no_grad():
        logits, _ = model(batch)  # [N, V], real positions sentence by sentence
    targets = batch.tgt_out[batch.tgt_out != PAD_ID]  # [N]
    token_log_probs = logits.log_softmax(-1).gather(1, targets[:, None]).squeeze(1)
    sums = token_log_probs.split([len(tokens) + 1 for tokens in outputs])
    return [(tokens, float(total.sum())) for tokens, total in zip(outputs, sums, strict=True)]


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_beam_finds_the_best_hypothesis_found_by_enumeration(alpha: float) -> None:
    """With a beam wider than the search space, beam search is exhaustive."""
    model = tiny_model("model.init_scale=0.8", seed=3)
    src = random_ids([4], seed=2)[0]
    max_len = 2
    best, best_score = max(
        (
            (tokens, log_p / gnmt_lp(len(tokens) + 1, alpha))
            for tokens, log_p in every_log_prob(model, src, max_len)
        ),
        key=lambda pair: pair[1],
    )
    found = run(beam(64, alpha), model, [src], max_len=max_len)[0][0]
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
    for strategy in (greedy(), beam(3), sampling(num_samples=2)):
        for hyps in run(strategy, model, random_ids([3, 8], seed=4), max_len=4):
            assert all(len(h.tokens) <= 4 for h in hyps)


def test_search_strategies_are_registered() -> None:
    assert get("search", "beam") is BeamSearch
    assert get("search", "greedy") is GreedySearch
    assert get("search", "sampling") is SamplingSearch


# ------------------------------------------------------------------------ beam penalties


def test_beam_score_is_log_p_over_the_gnmt_length_penalty_without_coverage() -> None:
    model = sharp_model(1)
    for hyps in run(beam(4, 0.7), model, random_ids([5, 8], seed=6)):
        for h in hyps:
            assert h.score == h.log_prob / gnmt_lp(len(h.tokens) + 1, 0.7)


def test_coverage_penalty_zero_keeps_the_default_results() -> None:
    model = sharp_model(2)
    src = random_ids([5, 8, 3], seed=7)
    default = run(BeamSearch(BeamSearch.Config(beam_size=4)), model, src)
    explicit = run(beam(4, 1.0, beta=0.0), model, src)
    assert [[(h.tokens, h.score) for h in hyps] for hyps in default] == [
        [(h.tokens, h.score) for h in hyps] for hyps in explicit
    ]


def coverage_penalty_by_hand(weights: torch.Tensor, src_len: int, beta: float) -> float:
    """beta * sum_j log(min(sum_i alpha_ij, 1)) over the real positions j < src_len."""
    coverage = weights[:, :src_len].sum(dim=0).tolist()
    return beta * sum(math.log(max(min(c, 1.0), 1e-10)) for c in coverage)


def test_beam_score_adds_the_coverage_penalty_of_the_hypothesis_weights() -> None:
    model = sharp_model(1)
    src = random_ids([5, 9], seed=6)
    beta = 0.5
    found = run(beam(4, 0.6, beta=beta), model, src, with_weights=True)
    for ids, hyps in zip(src, found, strict=True):
        for h in hyps:
            cp = coverage_penalty_by_hand(h.weights, len(ids) + 1, beta)
            assert cp <= 0
            base = h.log_prob / gnmt_lp(len(h.tokens) + 1, 0.6)
            assert h.score == pytest.approx(base + cp, abs=1e-4)


def test_coverage_penalty_changes_the_ranking_of_some_sentence() -> None:
    model = sharp_model(3)
    src = random_ids([3, 6, 9, 12, 5, 7], seed=8)
    plain = run(beam(5, 1.0), model, src, with_weights=True)
    covered = run(beam(5, 1.0, beta=5.0), model, src, with_weights=True)
    assert [[h.tokens for h in hyps] for hyps in plain] != [
        [h.tokens for h in hyps] for hyps in covered
    ]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_search_without_early_stopping_never_finds_a_worse_best(seed: int, alpha: float) -> None:
    model = sharp_model(seed)
    src = random_ids([3, 7, 10, 5], seed=seed)
    early = run(beam(3, alpha), model, src)
    patient = run(beam(3, alpha, early_stopping=False), model, src)
    for e, p in zip(early, patient, strict=True):
        assert p[0].score >= e[0].score - 1e-5
        assert len(p) <= 3


def test_search_without_early_stopping_goes_on_after_k_finished_for_some_sentence() -> None:
    def nbest_lists(model, src, early_stopping: bool) -> list[list[list[int]]]:
        found = run(beam(3, 1.0, early_stopping=early_stopping), model, src)
        return [[h.tokens for h in hyps] for hyps in found]

    cases = [(sharp_model(seed), random_ids([3, 7, 10, 5], seed=seed)) for seed in range(6)]
    assert any(nbest_lists(m, src, True) != nbest_lists(m, src, False) for m, src in cases)


def test_beam_rejects_a_negative_coverage_penalty() -> None:
    with pytest.raises(ConfigError, match="coverage_penalty"):
        BeamSearch.Config(coverage_penalty=-1.0)


# -------------------------------------------------------------------------------- prefix


PREFIX_STRATEGIES = [
    pytest.param(greedy, id="greedy"),
    pytest.param(partial(beam, 4), id="beam"),
    pytest.param(partial(beam, 3, beta=0.3, early_stopping=False), id="beam-patient"),
    pytest.param(partial(sampling, num_samples=3, seed=2), id="sampling"),
]


@pytest.mark.parametrize("make", PREFIX_STRATEGIES)
def test_every_output_starts_with_its_prefix(make) -> None:
    model = sharp_model(4)
    src = random_ids([4, 7, 5], seed=9)
    prefixes = [[9, 9, 12], [], [4]]
    for prefix, hyps in zip(prefixes, run(make(), model, src, prefixes=prefixes), strict=True):
        assert hyps
        for h in hyps:
            assert h.tokens[: len(prefix)] == prefix


@pytest.mark.parametrize("make", PREFIX_STRATEGIES)
def test_prefix_log_probs_count_in_the_score(make) -> None:
    model = sharp_model(5)
    src = random_ids([6], seed=3)
    with torch.no_grad():
        for h in run(make(), model, src, prefixes=[[7, 8]])[0]:
            assert h.log_prob == pytest.approx(sequence_log_prob(model, src[0], h.tokens), abs=1e-4)


def test_a_prefix_longer_than_the_cap_is_cut_at_the_cap() -> None:
    model = sharp_model()
    for make in (greedy, partial(beam, 3), partial(sampling, num_samples=2)):
        hyps = run(make(), model, random_ids([4], seed=1), max_len=2, prefixes=[[5, 6, 7, 8]])[0]
        assert all(h.tokens == [5, 6] for h in hyps)


def test_greedy_output_is_unchanged_by_a_prefix_of_its_own_first_words() -> None:
    model = sharp_model(6)
    src = random_ids([5, 8, 6], seed=10)
    plain = run(greedy(), model, src)
    prefixes = [hyps[0].tokens[:2] for hyps in plain]
    forced = run(greedy(), model, src, prefixes=prefixes)
    for p, f in zip(plain, forced, strict=True):
        assert f[0].tokens == p[0].tokens
        assert f[0].log_prob == pytest.approx(p[0].log_prob, abs=1e-5)
