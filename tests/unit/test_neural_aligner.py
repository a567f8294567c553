"""The learned aligner's parts: the HMM's forward algorithm and marginals against brute force,
its transitions, both distortions' posteriors, the lexicon's normalization and spelling scores,
agreement targets, link extraction, saving and loading, and repeatable learning."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from nmtkit.alignment.neural import extract, hmm, spelling
from nmtkit.alignment.neural.aligners import AlignerPair, Pair, make_batches, to_tensors
from nmtkit.alignment.neural.learner import LearnConfig, agreement_targets, learn
from nmtkit.alignment.neural.model import AlignerConfig, DirectionalAligner, Lexicon, with_null
from nmtkit.alignment.neural.vocab import NULL, PAD, SPECIALS, WordVocab
from nmtkit.errors import CheckpointError, ConfigError, DataError

# ---- brute force over state paths ------------------------------------------------------------


def path_scores(
    emissions: torch.Tensor, log_trans: torch.Tensor, log_init: torch.Tensor, length: int
) -> dict[tuple[int, ...], float]:
    """log score of every path of ``length`` states through one pair's lattice, in float64."""
    emissions, log_trans, log_init = (t.detach().double() for t in (emissions, log_trans, log_init))
    scores = {}
    for path in itertools.product(range(emissions.shape[1]), repeat=length):
        score = log_init[path[0]] + emissions[0, path[0]]
        for j in range(1, length):
            score = score + log_trans[path[j - 1], path[j]] + emissions[j, path[j]]
        scores[path] = float(score)
    return scores


def brute_log_partition(scores: dict[tuple[int, ...], float]) -> float:
    return float(torch.tensor(list(scores.values()), dtype=torch.float64).logsumexp(0))


def brute_marginals(
    scores: dict[tuple[int, ...], float], num_states: int, length: int
) -> np.ndarray:
    """p(state of word j = s), [length, num_states]."""
    total = brute_log_partition(scores)
    marginals = np.zeros((length, num_states))
    for path, score in scores.items():
        for j, state in enumerate(path):
            marginals[j, state] += np.exp(score - total)
    return marginals


def random_lattice(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Emissions [2, 3, 4], unnormalized transitions and initial scores; row 1 has 2 words."""
    generator = torch.Generator().manual_seed(seed)
    emissions = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    log_trans = torch.randn(2, 4, 4, generator=generator, dtype=torch.float64)
    log_init = torch.randn(2, 4, generator=generator, dtype=torch.float64)
    tgt_mask = torch.tensor([[True, True, True], [True, True, False]])
    return emissions, log_trans, log_init, tgt_mask


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_partition_sums_every_path_and_ignores_padded_target_words(seed: int) -> None:
    emissions, log_trans, log_init, tgt_mask = random_lattice(seed)
    got = hmm.log_partition(emissions, log_trans, log_init, tgt_mask)
    for b, length in enumerate(tgt_mask.sum(1).tolist()):
        scores = path_scores(emissions[b], log_trans[b], log_init[b], length)
        assert float(got[b]) == pytest.approx(brute_log_partition(scores), abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_state_posteriors_are_the_brute_force_marginals(seed: int) -> None:
    emissions, log_trans, log_init, tgt_mask = random_lattice(seed)
    posteriors = hmm.state_posteriors(emissions, log_trans, log_init, tgt_mask)
    for b, length in enumerate(tgt_mask.sum(1).tolist()):
        scores = path_scores(emissions[b], log_trans[b], log_init[b], length)
        expected = brute_marginals(scores, emissions.shape[2], length)
        np.testing.assert_allclose(posteriors[b, :length].numpy(), expected, atol=1e-9)
        np.testing.assert_allclose(posteriors[b, :length].sum(-1).numpy(), 1.0, atol=1e-9)
        assert torch.all(posteriors[b, length:] == 0)


def random_distortion(seed: int, max_jump: int = 2) -> hmm.JumpDistortion:
    torch.manual_seed(seed)
    distortion = hmm.JumpDistortion(max_jump)
    with torch.no_grad():
        distortion.jump.normal_()
        distortion.null_logit.fill_(-0.5)
    return distortion


# the second row's last source word is padding
SRC_MASK = torch.tensor([[True, True, True], [True, True, False]])


@pytest.mark.parametrize("seed", [0, 1])
def test_hmm_lattice_with_padding_matches_brute_force_over_real_states(seed: int) -> None:
    """With JumpDistortion's transitions, the forward algorithm over all 2I states equals the
    sum over paths through the real source words and their NULL copies only: padded source
    states are never entered, whatever they would emit."""
    distortion = random_distortion(seed)
    log_trans, log_init = distortion.transitions(SRC_MASK)
    emissions = torch.randn(2, 3, 6, generator=torch.Generator().manual_seed(seed))  # unmasked
    tgt_mask = torch.tensor([[True, True, True], [True, True, False]])
    with torch.no_grad():
        got = hmm.log_partition(emissions, log_trans, log_init, tgt_mask)
    posteriors = hmm.state_posteriors(emissions, log_trans, log_init, tgt_mask)
    for b in range(2):
        length, words = int(tgt_mask[b].sum()), int(SRC_MASK[b].sum())
        real = [*range(words), *range(3, 3 + words)]  # the words, then their NULL copies
        scores = path_scores(
            emissions[b][:, real], log_trans[b][real][:, real], log_init[b][real], length
        )
        assert float(got[b]) == pytest.approx(brute_log_partition(scores), abs=1e-4)
        expected = brute_marginals(scores, len(real), length)
        np.testing.assert_allclose(posteriors[b, :length][:, real].numpy(), expected, atol=1e-5)
        np.testing.assert_allclose(posteriors[b, :length].sum(-1).numpy(), 1.0, atol=1e-5)
        assert torch.all(posteriors[b, length:] == 0)
    # the padded source word of row 1 and its NULL copy get no posterior
    assert float(posteriors[1, :, [2, 5]].abs().max()) < 1e-6


@pytest.mark.parametrize("seed", [0, 1])
def test_transitions_are_distributions_over_the_real_states(seed: int) -> None:
    distortion = random_distortion(seed)
    with torch.no_grad():
        log_trans, log_init = distortion.transitions(SRC_MASK)
    for b in range(2):
        words = int(SRC_MASK[b].sum())
        real = [*range(words), *range(3, 3 + words)]
        padded = [state for state in range(6) if state not in real]
        np.testing.assert_allclose(log_init[b].logsumexp(-1).item(), 0.0, atol=1e-5)
        np.testing.assert_allclose(log_trans[b][real].logsumexp(-1).numpy(), 0.0, atol=1e-5)
        if padded:
            assert float(log_init[b, padded].max()) < -1e8
            assert float(log_trans[b][real][:, padded].max()) < -1e8


def test_a_null_copy_stays_at_its_word_and_moves_on_as_it() -> None:
    distortion = random_distortion(3)
    with torch.no_grad():
        log_trans, _ = distortion.transitions(torch.ones(1, 3, dtype=torch.bool))
    p_null = torch.sigmoid(distortion.null_logit).item()
    for i in range(3):
        # word i -> NULL copy of i only
        np.testing.assert_allclose(log_trans[0, i, 3 + i].exp().item(), p_null, rtol=1e-5)
        others = [3 + k for k in range(3) if k != i]
        assert float(log_trans[0, i, others].max()) < -1e8
    np.testing.assert_array_equal(log_trans[0, 3:].numpy(), log_trans[0, :3].numpy())


# ---- the directional aligner ------------------------------------------------------------------

SRC_WORDS = [*SPECIALS, "das", "haus", "ist", "klein", "ja"]
TGT_WORDS = [*SPECIALS, "the", "house", "is", "small", "yes", "well"]


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Row 0: 4 source and 5 target words; row 1: 2 and 3, padded."""
    src = torch.tensor([[3, 4, 5, 6], [7, 4, PAD, PAD]])
    tgt = torch.tensor([[3, 4, 5, 6, 8], [7, 8, 4, PAD, PAD]])
    return src, tgt


@pytest.mark.parametrize("distortion", ["hmm", "attention"])
@pytest.mark.parametrize("training", [True, False])
def test_posteriors_sum_to_one_per_real_target_word(distortion: str, training: bool) -> None:
    torch.manual_seed(0)
    config = AlignerConfig(dim=8, rnn_size=8, distortion=distortion, max_jump=2)
    aligner = DirectionalAligner(config, SRC_WORDS, TGT_WORDS).train(training)
    src, tgt = padded_batch()
    output = aligner(with_null(src), tgt, posteriors=True)
    post = output.posteriors
    assert post is not None and post.shape == (2, 5, 5)
    assert not post.requires_grad
    np.testing.assert_allclose(post[0].sum(-1).numpy(), 1.0, atol=1e-5)
    np.testing.assert_allclose(post[1, :3].sum(-1).numpy(), 1.0, atol=1e-5)
    assert torch.all(post[1, 3:] == 0)  # padded target words
    assert float(post[1, :, 3:].max()) < 1e-6  # padded source words
    assert output.lexicon.shape == (2, 5, 5)
    assert torch.isfinite(output.log_likelihood) and output.log_likelihood.item() < 0
    output.log_likelihood.backward()  # differentiable end to end


@pytest.mark.parametrize("distortion", ["hmm", "attention"])
def test_without_posteriors_none_are_computed(distortion: str) -> None:
    config = AlignerConfig(dim=8, rnn_size=8, distortion=distortion)
    aligner = DirectionalAligner(config, SRC_WORDS, TGT_WORDS)
    src, tgt = padded_batch()
    assert aligner(with_null(src), tgt).posteriors is None


@pytest.mark.parametrize("char_ngrams", [False, True])
def test_lexicon_in_eval_mode_is_normalized_over_the_whole_vocabulary(char_ngrams: bool) -> None:
    torch.manual_seed(0)
    lexicon = Lexicon(SRC_WORDS, TGT_WORDS, 8, char_ngrams).eval()
    src = with_null(torch.tensor([[3, 4, 5]]))
    every_word = torch.arange(len(TGT_WORDS))[None]
    with torch.no_grad():
        log_probs = lexicon(src, every_word)  # [1, V, I + 1]
    np.testing.assert_allclose(log_probs.logsumexp(1).numpy(), 0.0, atol=1e-5)


def test_lexicon_in_training_normalizes_over_the_batch_words_without_padding() -> None:
    torch.manual_seed(0)
    lexicon = Lexicon(SRC_WORDS, TGT_WORDS, 8, False).train()
    src = with_null(torch.tensor([[3, 4, 5]]))
    tgt = torch.tensor([[3, 5, 7, PAD]])
    with torch.no_grad():
        log_probs = lexicon(src, tgt)  # [1, 4, 4]
    np.testing.assert_allclose(log_probs[0, :3].logsumexp(0).numpy(), 0.0, atol=1e-5)
    assert float(log_probs[0, 3].max()) < -1e6  # PAD is never a word


# ---- spelling: trigram Dice of co-occurring words ------------------------------------------------


def test_dice_of_a_word_and_itself_is_one() -> None:
    for word in ("a", "is", "haus", "division", "1975"):
        assert spelling.dice(word, word) == 1.0, word


@pytest.mark.parametrize(
    ("a", "b"), [("ist", "is"), ("night", "nacht"), ("moratorium", "moratoire"), ("a", "abc")]
)
def test_dice_is_symmetric(a: str, b: str) -> None:
    assert spelling.dice(a, b) == spelling.dice(b, a)


@pytest.mark.parametrize(("a", "b"), [("haus", "house"), ("das", "the"), ("abc", "xyz")])
def test_dice_of_words_with_no_common_trigram_is_zero(a: str, b: str) -> None:
    assert spelling.dice(a, b) == 0.0


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # <is ist st> vs <is is>: '<is' in common
        ("ist", "is", 2 * 1 / (3 + 2)),
        # <ni nig igh ght ht> vs <na nac ach cht ht>: 'ht>' in common
        ("night", "nacht", 2 * 1 / (5 + 5)),
        # 10 and 9 trigrams, '<mo mor ora rat ato' in common
        ("moratorium", "moratoire", 2 * 5 / (10 + 9)),
        # the generated cognates of the integration tests: 5 trigrams and 7, 4 in common
        ("abcde", "abcdeen", 2 * 4 / (5 + 7)),
    ],
)
def test_dice_counts_the_trigrams_of_the_marked_word(a: str, b: str, expected: float) -> None:
    assert spelling.dice(a, b) == pytest.approx(expected)


# real ids from 3; 'pad' and 'pads' are spelled like the special entry '<pad>'
SPELL_SRC = [*SPECIALS, "haus", "ist", "night", "division", "pad", "hausen"]
SPELL_TGT = [*SPECIALS, "house", "is", "nacht", "division", "pads", "hausen", "the"]
SPELL_PAIRS: list[tuple[list[int], list[int]]] = [
    ([3, 4], [3, 4, 9]),  # haus ist / house is the
    ([5, 6, 6], [5, 6, 9]),  # night division division / nacht division the
    ([7], [7]),  # pad / pads
    ([4, 6], [4, 6]),  # ist division / is division: cells seen before
    ([8], []),  # hausen / -: no cell
]


def similarity_cells(
    pairs: list[tuple[list[int], list[int]]], **kwargs: float
) -> dict[tuple[int, int], float]:
    src_ids, tgt_ids, scores = spelling.cooccurring_similarity(
        pairs, SPELL_SRC, SPELL_TGT, **kwargs
    )
    assert src_ids.dtype == tgt_ids.dtype == np.int64 and scores.dtype == np.float32
    assert len(src_ids) == len(tgt_ids) == len(scores)
    keys = zip(src_ids.tolist(), tgt_ids.tolist(), strict=True)
    cells = dict(zip(keys, scores.tolist(), strict=True))
    assert len(cells) == len(scores)  # one entry per cell, however often the words co-occur
    return cells


def brute_similarity(
    pairs: list[tuple[list[int], list[int]]], min_dice: float
) -> dict[tuple[int, int], float]:
    cells = {}
    for src, tgt in pairs:
        for s, t in itertools.product(src, tgt):
            score = spelling.dice(SPELL_SRC[s], SPELL_TGT[t])
            if score > 0 and score >= min_dice:
                cells[s, t] = score
    return cells


@pytest.mark.parametrize("min_dice", [0.0, 0.1, 0.3, 0.5, 1.0])
def test_cooccurring_similarity_scores_exactly_the_alike_words_that_share_a_pair(
    min_dice: float,
) -> None:
    got = similarity_cells(SPELL_PAIRS, min_dice=min_dice)
    expected = brute_similarity(SPELL_PAIRS, min_dice)
    assert got.keys() == expected.keys()
    for cell, score in expected.items():
        assert got[cell] == pytest.approx(score), cell
        assert got[cell] >= min_dice


def test_cooccurring_similarity_keeps_only_pairs_that_share_a_sentence_pair() -> None:
    got = similarity_cells(SPELL_PAIRS)
    assert got.keys() == {(4, 4), (6, 6), (7, 7)}  # ist/is, division/division, pad/pads
    assert got[6, 6] == 1.0
    assert got[4, 4] == pytest.approx(0.4)
    assert got[7, 7] == pytest.approx(4 / 7)
    # alike, but never in one pair: haus/hausen, and hausen (whose pair has no target)/hausen
    assert (3, 8) not in got and (8, 8) not in got


def test_cooccurring_similarity_respects_the_threshold() -> None:
    assert (5, 5) not in similarity_cells(SPELL_PAIRS)  # night/nacht: 0.2 < MIN_DICE
    assert spelling.MIN_DICE > 0.2
    assert similarity_cells(SPELL_PAIRS, min_dice=0.2)[5, 5] == pytest.approx(0.2)
    assert similarity_cells(SPELL_PAIRS, min_dice=0.21).keys() == {(4, 4), (6, 6), (7, 7)}
    assert similarity_cells(SPELL_PAIRS, min_dice=0.41).keys() == {(6, 6), (7, 7)}
    assert similarity_cells(SPELL_PAIRS, min_dice=1.0).keys() == {(6, 6)}


def test_cooccurring_similarity_never_scores_the_special_entries() -> None:
    """'pad' and 'pads' are spelled like '<pad>', but pairs hold real ids only."""
    assert spelling.dice("pad", SPECIALS[PAD]) > spelling.MIN_DICE
    assert spelling.dice(SPECIALS[PAD], "pads") > spelling.MIN_DICE
    src_ids, tgt_ids, _ = spelling.cooccurring_similarity(
        SPELL_PAIRS, SPELL_SRC, SPELL_TGT, min_dice=0.0
    )
    assert len(src_ids) > 0
    assert src_ids.min() >= len(SPECIALS) and tgt_ids.min() >= len(SPECIALS)


@pytest.mark.parametrize("pairs", [[], [([], [])], [([3], [])], [([], [3])]])
def test_cooccurring_similarity_of_no_cell_is_three_empty_arrays(
    pairs: list[tuple[list[int], list[int]]],
) -> None:
    src_ids, tgt_ids, scores = spelling.cooccurring_similarity(pairs, SPELL_SRC, SPELL_TGT)
    assert src_ids.shape == tgt_ids.shape == scores.shape == (0,)
    assert src_ids.dtype == tgt_ids.dtype == np.int64 and scores.dtype == np.float32


@pytest.mark.parametrize("training", [True, False])
def test_spelling_adds_its_weight_times_the_score_to_the_lexicon_logits(training: bool) -> None:
    """log p(y | x) with spelling is the word-only lexicon's plus w * score(x, y), renormalized
    over the target words (the batch's in training, the vocabulary's in inference)."""
    every_word = list(range(len(SPECIALS), len(SPELL_TGT)))
    pairs = [([3, 4, 5, 6], every_word)]
    alike = spelling.cooccurring_similarity(pairs, SPELL_SRC, SPELL_TGT, min_dice=0.1)
    torch.manual_seed(0)
    plain = Lexicon(SPELL_SRC, SPELL_TGT, 8, False).train(training)
    spelled = Lexicon(SPELL_SRC, SPELL_TGT, 8, False, alike).train(training)
    spelled.load_state_dict({**plain.state_dict(), "spelling_weight": torch.tensor(2.5)})
    src = with_null(torch.tensor([[3, 4, 5, 6]]))
    tgt = torch.tensor([every_word])  # so that both modes normalize over the same words
    score = torch.zeros(len(SPELL_SRC), len(SPELL_TGT))
    score[alike[0], alike[1]] = torch.as_tensor(alike[2])
    # division/division, and haus/hausen off the diagonal
    assert score[6, 6] == 1.0 and score[3, 8] > 0 and score[5, 5] > 0
    with torch.no_grad():
        expected = (plain(src, tgt) + 2.5 * score[src[0]][:, tgt[0]].T).log_softmax(1)
        got = spelled(src, tgt)  # [1, J, I + 1]
    np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-5)


def test_with_null_prepends_the_null_word() -> None:
    ids = torch.tensor([[5, 6], [7, PAD]])
    assert with_null(ids).tolist() == [[NULL, 5, 6], [NULL, 7, PAD]]


def test_unknown_distortion_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown distortion 'ibm4'"):
        AlignerConfig(distortion="ibm4")


# ---- agreement targets ------------------------------------------------------------------------


def random_rows(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=generator).softmax(-1)


def test_agreement_targets_have_the_posteriors_shapes_and_are_distributions() -> None:
    forward, reverse = random_rows((2, 5, 4), 0), random_rows((2, 3, 6), 1)
    fwd, rev = agreement_targets(forward, reverse)
    assert fwd.shape == forward.shape and rev.shape == reverse.shape
    assert torch.all(fwd >= 0) and torch.all(rev >= 0)
    np.testing.assert_allclose(fwd.sum(-1).numpy(), 1.0, atol=1e-5)
    np.testing.assert_allclose(rev.sum(-1).numpy(), 1.0, atol=1e-5)


def confident(permutation: list[int], confidence: float) -> torch.Tensor:
    """[1, n, n + 1]: each word's posterior is ``confidence`` on its partner, the rest spread
    over the other columns (NULL included)."""
    n = len(permutation)
    rows = torch.full((1, n, n + 1), (1 - confidence) / n)
    for word, partner in enumerate(permutation):
        rows[0, word, partner + 1] = confidence
    return rows


def test_agreement_targets_keep_a_confident_one_to_one_alignment() -> None:
    perm = [2, 0, 3, 1]  # target j <- source perm[j]
    inverse = [perm.index(i) for i in range(4)]  # source i -> target inverse[i]
    fwd, rev = agreement_targets(confident(perm, 0.85), confident(inverse, 0.85))
    assert fwd[0].argmax(-1).tolist() == [i + 1 for i in perm]
    assert rev[0].argmax(-1).tolist() == [j + 1 for j in inverse]
    # agreeing models reinforce each other: the targets are sharper than either posterior
    assert float(fwd[0, torch.arange(4), torch.tensor(perm) + 1].min()) > 0.95
    assert float(rev[0, torch.arange(4), torch.tensor(inverse) + 1].min()) > 0.95


def test_agreement_targets_keep_null_for_a_word_nothing_links_to() -> None:
    # target word 1 is NULL in the forward model and no source word links to it in the reverse
    forward = torch.tensor([[[0.05, 0.9, 0.05], [0.9, 0.05, 0.05], [0.05, 0.05, 0.9]]])
    reverse = torch.tensor([[[0.04, 0.9, 0.02, 0.04], [0.04, 0.04, 0.02, 0.9]]])
    fwd, _ = agreement_targets(forward, reverse)
    assert fwd[0].argmax(-1).tolist() == [1, 0, 2]
    assert float(fwd[0, 1, 0]) > 0.9


# ---- link extraction --------------------------------------------------------------------------

# Two source words, three target words; column 0 is NULL. Exact binary fractions, so the mean
# posteriors below are exact: (0,0) .8125, (1,1) .4375, (1,2) .3125, the rest at most .125.
FORWARD = np.array(  # [J, I + 1]: t0 <- s0, t1 <- s1, t2 <- NULL
    [[0.125, 0.75, 0.125], [0.125, 0.25, 0.625], [0.75, 0.125, 0.125]]
)
REVERSE = np.array(  # [I, J + 1]: s0 -> t0, s1 -> t2
    [[0.125, 0.875, 0.0, 0.0], [0.25, 0.0, 0.25, 0.5]]
)


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(0.5, [(0, 0)]), (0.4375, [(0, 0), (1, 1)]), (0.3, [(0, 0), (1, 1), (1, 2)])],
)
def test_soft_links_are_mean_posteriors_at_least_the_threshold(
    threshold: float, expected: list[tuple[int, int]]
) -> None:
    got = extract.links(FORWARD, REVERSE, method="soft", threshold=threshold)
    assert sorted(got) == expected


def test_soft_is_the_default_method_at_one_half() -> None:
    assert extract.links(FORWARD, REVERSE) == [(0, 0)]


def test_null_is_never_a_link() -> None:
    """Words whose mass is on NULL get no link, however low the threshold above the rest."""
    forward = np.array([[1.0, 0.0, 0.0], [0.96, 0.02, 0.02]])  # [J=2, I+1=3]
    reverse = np.array([[0.97, 0.02, 0.01], [1.0, 0.0, 0.0]])  # [I=2, J+1=3]
    for method in extract.METHODS:
        assert extract.links(forward, reverse, method=method, threshold=0.05) == [], method


def test_directional_links_are_each_words_argmax() -> None:
    assert extract.links(FORWARD, REVERSE, method="forward") == [(0, 0), (1, 1)]
    assert extract.links(FORWARD, REVERSE, method="reverse") == [(0, 0), (1, 2)]
    assert extract.directional_links(FORWARD) == [(0, 0), (1, 1)]  # (target, source)


def test_symmetrized_links_lie_between_intersection_and_union() -> None:
    assert extract.links(FORWARD, REVERSE, method="intersection") == [(0, 0)]
    union = {(0, 0), (1, 1), (1, 2)}
    assert set(extract.links(FORWARD, REVERSE, method="union")) == union
    for method in ("grow-diag", "grow-diag-final", "grow-diag-final-and"):
        got = set(extract.links(FORWARD, REVERSE, method=method))
        assert {(0, 0)} <= got <= union, method


def test_every_method_handles_a_pair_with_an_empty_side() -> None:
    for forward, reverse in [
        (np.ones((2, 1)), np.zeros((0, 3))),
        (np.zeros((0, 3)), np.ones((2, 1))),
    ]:
        for method in extract.METHODS:
            assert extract.links(forward, reverse, method=method) == [], method


def test_unknown_method_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="grow-diag"):
        extract.links(FORWARD, REVERSE, method="grow-diagonal")


def test_word_weights_are_the_mean_posteriors_per_target_word() -> None:
    weights = extract.word_weights(FORWARD, REVERSE)
    assert weights.shape == (3, 2)
    assert weights[0, 0] == 0.8125 and weights[1, 1] == 0.4375


# ---- batching ---------------------------------------------------------------------------------


def test_make_batches_covers_each_pair_once_within_max_tokens() -> None:
    lengths = [(3, 4), (1, 1), (6, 2), (2, 7), (5, 5), (1, 2), (4, 4)]
    pairs = [([5] * s, [5] * t) for s, t in lengths]
    batches = make_batches(pairs, 16)
    assert sorted(index for batch in batches for index in batch) == list(range(len(pairs)))
    for batch in batches:
        longest = max(max(len(pairs[k][0]), len(pairs[k][1])) + 1 for k in batch)
        assert len(batch) == 1 or longest * len(batch) <= 16
    src, tgt = to_tensors(pairs, batches[0])
    assert src.shape[0] == tgt.shape[0] == len(batches[0])
    assert int((src != PAD).sum()) == sum(len(pairs[k][0]) for k in batches[0])


# ---- the aligner pair -------------------------------------------------------------------------


def pair(src: str, tgt: str) -> Pair:
    return src.split(), tgt.split()


TINY: list[Pair] = [
    pair("das haus ist klein", "the house is small"),
    pair("das haus", "the house"),
    pair("das buch ist klein", "the book is small"),
    pair("ein buch", "a book"),
    pair("ein haus ist gross", "a house is big"),
    pair("klein ist das buch", "small is the book"),
]


def tiny_config(**aligner: object) -> LearnConfig:
    return LearnConfig(
        aligner=AlignerConfig(dim=16, rnn_size=16, max_jump=3, **aligner),  # type: ignore[arg-type]
        epochs=2,
        max_tokens=40,
        repeat=2,
        agreement=1.0,
        agreement_from=1,
        lr=1e-2,
        seed=5,
    )


@pytest.fixture(scope="module")
def tiny_pair() -> AlignerPair:
    aligner, report = learn(TINY, tiny_config(), show_progress=False)
    assert report.updates > 0 and np.isfinite(report.loss)
    return aligner


def test_posteriors_have_each_pairs_shapes_and_are_distributions(tiny_pair: AlignerPair) -> None:
    posteriors = tiny_pair.posteriors(TINY)
    assert len(posteriors) == len(TINY)
    for (src, tgt), (fwd, rev) in zip(TINY, posteriors, strict=True):
        assert fwd.shape == (len(tgt), len(src) + 1)
        assert rev.shape == (len(src), len(tgt) + 1)
        np.testing.assert_allclose(fwd.sum(1), 1.0, atol=1e-5)
        np.testing.assert_allclose(rev.sum(1), 1.0, atol=1e-5)


def test_posteriors_do_not_depend_on_batching(tiny_pair: AlignerPair) -> None:
    together = tiny_pair.posteriors(TINY)
    alone = tiny_pair.posteriors(TINY, max_tokens=1)
    for (fwd, rev), (fwd1, rev1) in zip(together, alone, strict=True):
        np.testing.assert_allclose(fwd, fwd1, atol=1e-5)
        np.testing.assert_allclose(rev, rev1, atol=1e-5)


def test_pairs_with_an_empty_side_get_no_links_even_batched_alone(tiny_pair: AlignerPair) -> None:
    """A batch of empty-sided pairs only (as a corpus with many blank lines makes) must not reach
    the models, which cannot score a side without words."""
    pairs: list[Pair] = [([], ["the"]), (["das"], []), ([], []), TINY[1]]
    for max_tokens in (1, 4000):
        posteriors = tiny_pair.posteriors(pairs, max_tokens=max_tokens)
        shapes = [(fwd.shape, rev.shape) for fwd, rev in posteriors]
        assert shapes == [((1, 1), (0, 2)), ((0, 2), (1, 1)), ((0, 1), (0, 1)), ((2, 3), (2, 3))]
        for fwd, rev in posteriors[:3]:
            assert extract.links(fwd, rev, method="union") == []


def test_save_and_load_give_identical_posteriors(tiny_pair: AlignerPair, tmp_path: Path) -> None:
    path = tmp_path / "pair.aligner"
    tiny_pair.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["pair.aligner"]  # no temporary left
    loaded = AlignerPair.load(path)
    assert loaded.config == tiny_pair.config
    assert loaded.src_vocab.words == tiny_pair.src_vocab.words
    for (fwd, rev), (fwd2, rev2) in zip(
        tiny_pair.posteriors(TINY), loaded.posteriors(TINY), strict=True
    ):
        np.testing.assert_array_equal(fwd, fwd2)
        np.testing.assert_array_equal(rev, rev2)


def test_save_and_load_keep_char_ngrams_and_the_attention_prior(tmp_path: Path) -> None:
    aligner, _ = learn(
        TINY[:3], tiny_config(distortion="attention", char_ngrams=True), show_progress=False
    )
    aligner.save(tmp_path / "pair.aligner")
    loaded = AlignerPair.load(tmp_path / "pair.aligner")
    assert loaded.config.char_ngrams and loaded.config.distortion == "attention"
    for (fwd, rev), (fwd2, rev2) in zip(
        aligner.posteriors(TINY[:3]), loaded.posteriors(TINY[:3]), strict=True
    ):
        np.testing.assert_array_equal(fwd, fwd2)
        np.testing.assert_array_equal(rev, rev2)


def test_save_and_load_keep_the_spelling_scores(tmp_path: Path) -> None:
    aligner, _ = learn(TINY, tiny_config(spelling=True), show_progress=False)
    assert aligner.spelling is not None and len(aligner.spelling[2]) > 0  # ist / is at least
    weight = float(aligner.forward.lexicon.spelling_weight.detach())
    assert weight != 1.0  # learned
    aligner.save(tmp_path / "pair.aligner")
    loaded = AlignerPair.load(tmp_path / "pair.aligner")
    assert loaded.config.spelling and loaded.spelling is not None
    for saved, read in zip(aligner.spelling, loaded.spelling, strict=True):
        np.testing.assert_array_equal(saved, read)
        assert saved.dtype == read.dtype
    assert float(loaded.forward.lexicon.spelling_weight.detach()) == weight
    for (fwd, rev), (fwd2, rev2) in zip(
        aligner.posteriors(TINY), loaded.posteriors(TINY), strict=True
    ):
        np.testing.assert_array_equal(fwd, fwd2)
        np.testing.assert_array_equal(rev, rev2)


def test_spelling_scores_are_dropped_when_the_config_has_no_spelling() -> None:
    src, tgt = WordVocab(SPELL_SRC), WordVocab(SPELL_TGT)
    alike = spelling.cooccurring_similarity(SPELL_PAIRS, SPELL_SRC, SPELL_TGT)
    aligner = AlignerPair(AlignerConfig(dim=8, spelling=False), src, tgt, alike)
    assert aligner.spelling is None and aligner.forward.lexicon.spelling is None


def not_an_aligner(kind: str, folder: Path) -> Path:
    path = folder / f"{kind}.aligner"
    if kind == "text":
        path.write_text("das haus\nthe house\n", "utf-8")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "torch-dict":
        torch.save({"model": torch.zeros(2)}, path)
    elif kind == "torch-tensor":
        torch.save(torch.zeros(2), path)
    elif kind == "folder":
        path.mkdir()
    return path  # "missing": nothing there


@pytest.mark.parametrize(
    "kind", ["text", "empty", "torch-dict", "torch-tensor", "folder", "missing"]
)
def test_loading_what_is_not_an_aligner_is_a_checkpoint_error(kind: str, tmp_path: Path) -> None:
    path = not_an_aligner(kind, tmp_path)
    with pytest.raises(CheckpointError) as caught:
        AlignerPair.load(path)
    assert str(path) in str(caught.value)


def test_a_word_the_aligner_never_saw_is_a_data_error_naming_the_pair(
    tiny_pair: AlignerPair,
) -> None:
    pairs: list[Pair] = [TINY[0], pair("das auto", "the car")]
    with pytest.raises(DataError, match=r"pair 2: the word 'auto'"):
        tiny_pair.posteriors(pairs)


def test_learning_with_a_seed_is_repeatable() -> None:
    first, _ = learn(TINY, tiny_config(), show_progress=False)
    second, _ = learn(TINY, tiny_config(), show_progress=False)
    other, _ = learn(TINY, dataclasses.replace(tiny_config(), seed=6), show_progress=False)
    for (fwd, rev), (fwd2, rev2), (fwd3, _) in zip(
        first.posteriors(TINY), second.posteriors(TINY), other.posteriors(TINY), strict=True
    ):
        np.testing.assert_array_equal(fwd, fwd2)
        np.testing.assert_array_equal(rev, rev2)
        assert not np.array_equal(fwd, fwd3)


def test_learning_calls_on_epoch_after_each_epoch() -> None:
    seen: list[int] = []
    learn(TINY, tiny_config(), on_epoch=lambda epoch, _: seen.append(epoch), show_progress=False)
    assert seen == [1, 2]


def test_extra_text_joins_the_vocabularies() -> None:
    extra: list[Pair] = [pair("ein auto", "a car")]
    aligner, _ = learn(TINY[:2], tiny_config(), extra=extra, show_progress=False)
    assert "auto" in aligner.src_vocab.ids and "car" in aligner.tgt_vocab.ids
    assert len(aligner.posteriors(extra)) == 1


def test_nothing_to_learn_from_is_a_data_error() -> None:
    with pytest.raises(DataError, match="nothing to learn from"):
        learn([([], ["the"]), (["das"], [])], tiny_config(), show_progress=False)


@pytest.mark.parametrize(
    "bad",
    [
        {"epochs": 0},
        {"repeat": 0},
        {"max_tokens": 0},
        {"lr": 0.0},
        {"agreement": -1.0},
        {"time_budget": 0.0},
    ],
)
def test_bad_learn_configs_are_config_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        LearnConfig(**bad)  # type: ignore[arg-type]


def test_word_vocab_puts_specials_first_then_words_by_frequency() -> None:
    vocab = WordVocab.build([["b", "a", "b"], ["c", "b", "a"]])
    assert vocab.words == [*SPECIALS, "b", "a", "c"]
    assert vocab.encode(["a", "c"]) == [4, 5]
    with pytest.raises(KeyError):
        vocab.encode(["d"])


def test_an_ensemble_averages_its_members_posteriors_and_saves_them_all(tmp_path):
    from nmtkit.alignment.neural.aligners import AlignerEnsemble
    from nmtkit.alignment.neural.learner import LearnConfig, learn_ensemble

    pairs = [(["a", "b", "c"], ["x", "y", "z"]), (["b", "c"], ["y", "z"])] * 4
    config = LearnConfig(
        aligner=AlignerConfig(dim=8, rnn_size=8, max_jump=2), epochs=2, members=2, repeat=1
    )
    ensemble, reports = learn_ensemble(pairs, config, show_progress=False)
    assert len(ensemble.members) == len(reports) == 2
    one, two = (member.posteriors(pairs) for member in ensemble.members)
    assert not np.allclose(one[0][0], two[0][0])  # other seeds, other models
    for (f1, r1), (f2, r2), (f, r) in zip(one, two, ensemble.posteriors(pairs), strict=True):
        np.testing.assert_allclose(f, (f1 + f2) / 2, rtol=1e-6)
        np.testing.assert_allclose(r, (r1 + r2) / 2, rtol=1e-6)
    ensemble.save(tmp_path / "both.pt")
    again = AlignerEnsemble.load(tmp_path / "both.pt")
    for (f, r), (g, s) in zip(ensemble.posteriors(pairs), again.posteriors(pairs), strict=True):
        np.testing.assert_allclose(f, g)
        np.testing.assert_allclose(r, s)
    ensemble.members[0].save(tmp_path / "one.pt")  # a single pair loads as an ensemble of one
    assert len(AlignerEnsemble.load(tmp_path / "one.pt").members) == 1
    with pytest.raises(CheckpointError):
        AlignerPair.load(tmp_path / "both.pt")


def test_an_ensemble_refuses_members_of_other_texts():
    from nmtkit.alignment.neural.aligners import AlignerEnsemble
    from nmtkit.alignment.neural.learner import LearnConfig, learn

    config = LearnConfig(aligner=AlignerConfig(dim=8, rnn_size=8), epochs=1, repeat=1)
    first, _ = learn([(["a", "b"], ["x", "y"])], config, show_progress=False)
    second, _ = learn([(["c", "d"], ["x", "y"])], config, show_progress=False)
    with pytest.raises(ConfigError, match="one text"):
        AlignerEnsemble([first, second])
