"""Forced decoding gives a translation the very score the search reported for it: beam search
with and without GNMT's penalties, greedy search and sampling, prefixes and capped outputs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from nmtkit.checkpoint import LoadedModel
from nmtkit.config import load_config
from nmtkit.data.batching import collate
from nmtkit.models import seq2seq
from nmtkit.registry import Hypothesis, SearchStrategy
from nmtkit.search import BeamSearch, GreedySearch, SamplingSearch
from nmtkit.search.decode import decode_sequences
from nmtkit.search.length_policy import LengthPolicy
from nmtkit.translation.forced import (
    ForcedScorer,
    PairScore,
    force_at_once,
    force_by_steps,
    format_jsonl,
    format_tsv,
)
from tests.unit.test_models import random_ids, tiny_model

SOURCES = random_ids([5, 9, 3, 7, 12, 1, 6], seed=3)


def loaded_model(seed: int = 0) -> LoadedModel:
    """A random model with large weights (far from uniform), wrapped as a loaded one; the text
    pipelines are not needed to score ids."""
    model = tiny_model("model.init_scale=0.5", seed=seed)
    config = load_config(preset="tiny")
    return LoadedModel(
        model=model,
        config=config,
        vocab=None,  # type: ignore[arg-type]
        src_text=None,  # type: ignore[arg-type]
        tgt_text=None,  # type: ignore[arg-type]
        path=Path("random.pt"),
        step=0,
    )


def search(
    loaded: LoadedModel, strategy: SearchStrategy, **options: object
) -> list[list[Hypothesis]]:
    return decode_sequences(
        loaded.model,
        SOURCES,
        strategy,
        batch_size=3,
        max_len_a=1.0,
        max_len_b=3,  # short caps: many outputs end in the EOS the cap forces
        precision="fp32",
        **options,  # type: ignore[arg-type]
    )


def assert_scores_match(
    loaded: LoadedModel, strategy: SearchStrategy, found: list[list[Hypothesis]]
) -> None:
    src = [ids for ids, hyps in zip(SOURCES, found, strict=True) for _ in hyps]
    hyps = [hyp for hyps in found for hyp in hyps]
    scorer = ForcedScorer(loaded, strategy=strategy, batch_size=4, precision="fp32")
    scored = scorer.score_ids(src, [hyp.tokens for hyp in hyps])
    assert len(scored) == len(hyps) >= len(SOURCES)
    for hyp, item in zip(hyps, scored, strict=True):
        assert item.score == pytest.approx(hyp.score, abs=1e-4)
        assert item.log_prob == pytest.approx(hyp.log_prob, abs=1e-4)
        assert item.num_tokens == len(hyp.tokens) + 1


@pytest.mark.parametrize(
    ("alpha", "beta"), [(1.0, 0.0), (0.0, 0.0), (0.6, 0.4), (2.0, 1.0)], ids=str
)
def test_a_beam_hypothesis_scores_as_the_beam_reported(alpha: float, beta: float) -> None:
    loaded = loaded_model()
    strategy = BeamSearch(
        BeamSearch.Config(beam_size=4, length_penalty=alpha, coverage_penalty=beta)
    )
    found = [hyps[:4] for hyps in search(loaded, strategy)]
    assert_scores_match(loaded, strategy, found)


def test_greedy_and_sampled_translations_score_as_their_search_reported() -> None:
    loaded = loaded_model(seed=1)
    greedy = GreedySearch(GreedySearch.Config())
    sampling = SamplingSearch(SamplingSearch.Config(num_samples=3, seed=7))
    assert_scores_match(loaded, greedy, search(loaded, greedy))
    assert_scores_match(loaded, sampling, search(loaded, sampling))


def test_forced_prefix_words_count_in_the_score_as_in_the_search() -> None:
    loaded = loaded_model(seed=2)
    strategy = BeamSearch(BeamSearch.Config(beam_size=3, coverage_penalty=0.2))
    prefixes = [[5, 6] if i % 2 else [] for i in range(len(SOURCES))]
    assert_scores_match(loaded, strategy, search(loaded, strategy, prefixes=prefixes))


def test_a_pair_scores_the_same_alone_and_in_any_batch() -> None:
    loaded = loaded_model()
    tgt = random_ids([4, 2, 11, 0, 6, 3, 8], seed=4)
    together = ForcedScorer(loaded, batch_size=64, precision="fp32").score_ids(SOURCES, tgt)
    tight = ForcedScorer(loaded, lengths=LengthPolicy(max_tokens=10), precision="fp32")
    for i, item in enumerate(tight.score_ids(SOURCES, tgt)):
        alone = tight.score_ids([SOURCES[i]], [tgt[i]])[0]
        for other in (item, together[i]):
            assert other.log_prob == pytest.approx(alone.log_prob, abs=1e-5)
            assert other.score == pytest.approx(alone.score, abs=1e-5)


def test_perplexity_is_exp_of_the_mean_negative_log_prob() -> None:
    item = PairScore(log_prob=-6.0, num_tokens=3, score=-2.0)
    assert item.ppl == pytest.approx(math.exp(2.0))
    assert PairScore(log_prob=-1e6, num_tokens=1, score=-1e6).ppl == math.inf


def test_output_lines_hold_log_prob_score_perplexity_and_length() -> None:
    item = PairScore(log_prob=-6.0, num_tokens=3, score=-2.0)
    assert format_tsv(0, item) == f"-6.000000\t-2.000000\t{math.exp(2.0):.6f}\t3\n"
    line = format_jsonl(4, PairScore(log_prob=-math.inf, num_tokens=2, score=-math.inf))
    assert line == ('{"id": 4, "log_prob": null, "score": null, "ppl": null, "num_tokens": 2}\n')


def test_forcing_step_by_step_gives_the_scores_and_coverage_of_forcing_at_once() -> None:
    """The step-by-step path that long pairs take (linear memory) agrees with the one pass."""
    loaded = loaded_model(seed=4)
    targets = random_ids([4, 0, 8, 2, 11, 5, 3], seed=5)
    batch = collate(SOURCES, targets, range(len(SOURCES)))
    with torch.inference_mode():
        at_once = force_at_once(loaded.model.eval(), batch)
        by_steps = force_by_steps(loaded.model, batch)
    for one, other in zip(at_once, by_steps, strict=True):
        assert torch.allclose(one, other, atol=1e-5)


def test_target_log_probs_over_several_output_blocks_match_one_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loaded = loaded_model(seed=6)
    batch = collate(SOURCES, SOURCES, range(len(SOURCES)))
    with torch.inference_mode():
        whole, _ = loaded.model.eval().target_log_probs(batch)
        monkeypatch.setattr(seq2seq, "OUTPUT_BLOCK", 3 * loaded.model.tgt_vocab_size)
        blocked, _ = loaded.model.target_log_probs(batch)  # [N] in blocks of 3 positions
    assert torch.allclose(whole, blocked, atol=1e-6)


@pytest.mark.parametrize("readout_state", ["current", "previous"])
def test_teacher_forcing_without_gradients_gives_exactly_the_outputs_with_them(
    readout_state: str,
) -> None:
    """Without gradients the decoder writes each step into tensors made once (so that a long
    line's memory stays linear); the numbers are those of the differentiable pass."""
    model = tiny_model(f"model.decoder.readout_state={readout_state}", seed=7).eval()
    targets = random_ids([4, 1, 8, 2, 11, 5, 3], seed=8)
    batch = collate(SOURCES, targets, range(len(SOURCES)))
    encoded = model.encode(batch.src, batch.src_lengths)
    with_grad = model.decoder(batch.tgt_in, encoded)
    with torch.no_grad():
        without = model.decoder(batch.tgt_in, encoded)
    assert torch.equal(with_grad.readout.detach(), without.readout)
    assert torch.equal(with_grad.weights.detach(), without.weights)
