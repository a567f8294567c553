"""Sampling: reproducible per seed, greedy in the limit, within top-k and the nucleus."""

from __future__ import annotations

import pytest
import torch

from nmtkit.data.batching import collate
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.errors import ConfigError
from nmtkit.search import SamplingSearch
from nmtkit.search.sampling import keep_top_k, keep_top_p, sample_inverse_cdf
from tests.unit.test_models import random_ids
from tests.unit.test_search import greedy, run, sampling, sharp_model

SOURCES = random_ids([4, 9, 6, 3], seed=11)


def tokens_of(found) -> list[list[list[int]]]:
    return [[h.tokens for h in hyps] for hyps in found]


def test_the_same_seed_gives_the_same_samples() -> None:
    model = sharp_model(1)
    first = run(sampling(num_samples=3, seed=7), model, SOURCES)
    again = run(sampling(num_samples=3, seed=7), model, SOURCES)
    assert tokens_of(first) == tokens_of(again)
    assert [h.score for hyps in first for h in hyps] == [h.score for hyps in again for h in hyps]


def test_another_seed_gives_other_samples() -> None:
    model = sharp_model(1)
    first = run(sampling(num_samples=3, seed=7), model, SOURCES)
    other = run(sampling(num_samples=3, seed=8), model, SOURCES)
    assert tokens_of(first) != tokens_of(other)


@pytest.mark.parametrize(
    "options",
    [{"top_k": 1}, {"temperature": 1e-4}, {"top_p": 1e-6}],
    ids=["top_k=1", "temperature->0", "top_p->0"],
)
def test_sampling_in_the_greedy_limit_equals_greedy(options: dict[str, float]) -> None:
    model = sharp_model(2)
    expected = run(greedy(), model, SOURCES)
    found = run(sampling(num_samples=3, **options), model, SOURCES)
    for g, samples in zip(expected, found, strict=True):
        assert len(samples) == 3
        for h in samples:
            assert h.tokens == g[0].tokens
            assert h.log_prob == pytest.approx(g[0].log_prob, abs=1e-4)


def step_log_probs(model, src_ids: list[int], tokens: list[int]) -> torch.Tensor:
    """Teacher-forced log p(y_i | y_<i, x) of each step, PAD and BOS banned: [len+1, V]."""
    with torch.no_grad():
        logits, _ = model(collate([src_ids], [tokens], [0]))
    log_probs = logits.log_softmax(-1)  # one sentence: its rows are its steps
    log_probs[:, [PAD_ID, BOS_ID]] = float("-inf")
    return log_probs


def test_every_sampled_word_is_within_the_top_k_of_its_step() -> None:
    model = sharp_model(3)
    k, max_len = 3, 12
    found = run(sampling(num_samples=4, top_k=k, temperature=2.0), model, SOURCES, max_len=max_len)
    for src_ids, samples in zip(SOURCES, found, strict=True):
        for h in samples:
            log_probs = step_log_probs(model, src_ids, h.tokens)  # [len+1, V]
            # EOS is sampled too, unless the cap forced it.
            words = h.tokens + ([EOS_ID] if len(h.tokens) < max_len else [])
            for t, word in enumerate(words):
                kth = log_probs[t].topk(k).values[-1]
                assert log_probs[t, word] >= kth - 1e-4


def test_samples_come_best_first_scored_by_log_p_per_word() -> None:
    model = sharp_model(4)
    for samples in run(sampling(num_samples=5, temperature=1.5), model, SOURCES):
        assert len(samples) == 5
        assert [h.score for h in samples] == sorted((h.score for h in samples), reverse=True)
        for h in samples:
            assert h.score == pytest.approx(h.log_prob / (len(h.tokens) + 1))


def test_pad_and_bos_are_never_sampled() -> None:
    model = sharp_model(5)
    for samples in run(sampling(num_samples=8, temperature=5.0), model, SOURCES):
        for h in samples:
            assert PAD_ID not in h.tokens and BOS_ID not in h.tokens


# ---------------------------------------------------------------------- the free functions


def test_keep_top_k_leaves_the_k_highest() -> None:
    logits = torch.tensor([[0.1, 2.0, -1.0, 1.5, 0.7]])
    kept = keep_top_k(logits, 2)
    assert torch.isfinite(kept).tolist() == [[False, True, False, True, False]]
    assert torch.equal(keep_top_k(logits, 0), logits)


@pytest.mark.parametrize(
    ("p", "kept"),
    [(0.4, [1]), (0.75, [1, 3]), (0.85, [1, 3, 0]), (1.0, [0, 1, 2, 3])],
)
def test_keep_top_p_leaves_the_fewest_words_of_mass_p(p: float, kept: list[int]) -> None:
    logits = torch.tensor([[0.15, 0.5, 0.05, 0.3]]).log()
    finite = torch.isfinite(keep_top_p(logits, p))[0]
    assert sorted(finite.nonzero().squeeze(1).tolist()) == sorted(kept)


def test_inverse_cdf_follows_the_probabilities_and_skips_impossible_words() -> None:
    probs = torch.tensor([0.0, 0.2, 0.0, 0.5, 0.3, 0.0])
    logits = probs.log().expand(1000, -1)  # [N, V]
    uniforms = torch.arange(1000) / 1000  # 0, 0.001, ..., 0.999
    words = sample_inverse_cdf(logits, uniforms)
    counts = torch.bincount(words, minlength=6) / 1000
    assert torch.allclose(counts, probs, atol=2e-3)
    assert int(words[0]) == 1 and int(words[-1]) == 4


@pytest.mark.parametrize(
    "options",
    [{"temperature": 0.0}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.5}, {"num_samples": 0}],
)
def test_sampling_rejects_options_out_of_range(options: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        SamplingSearch.Config(**options)
