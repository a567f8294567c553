"""Each technique of ``nmtkit align --learn`` earns its place: on a small generated corpus whose
true alignment is known, it gives a lower alignment error rate than plain soft attention read off
by argmax (``distortion='attention'``, no agreement, ``forward`` links), learned for the same
epochs with the same seed, and, where the technique can be switched off alone, than the same
aligner without it.

The corpora: source words drawn (Zipf) from a vocabulary with a one-to-one dictionary into
distinct target words, translated word by word, adjacent words swapped at random, and words
with no counterpart inserted; the gold is where each translation went (sure = possible).
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

import pytest

from nmtkit.alignment.gold import alignment_error_rate
from nmtkit.alignment.links import Link
from nmtkit.alignment.neural import extract
from nmtkit.alignment.neural.aligners import Pair
from nmtkit.alignment.neural.learner import LearnConfig, learn
from nmtkit.alignment.neural.model import AlignerConfig

pytestmark = pytest.mark.slow

SEED = 1  # of learning, the same for every aligner compared


@dataclass(frozen=True)
class Corpus:
    pairs: list[Pair]
    gold: list[set[Link]]


def _new_word(rng: random.Random, length: int, taken: set[str], prefix: str) -> str:
    while True:
        word = prefix + "".join(rng.choice(string.ascii_lowercase) for _ in range(length))
        if word not in taken:
            taken.add(word)
            return word


def make_corpus(
    seed: int,
    *,
    num_pairs: int,
    vocab: int,
    zipf: float,
    swap: float = 0.3,
    tgt_unaligned: tuple[int, float] = (2, 0.2),
    src_unaligned: tuple[int, float] = (0, 0.0),
    cognates: bool = False,
    prefix: str = "",
) -> Corpus:
    """A word-for-word translated corpus with local reordering and unaligned words.

    Args:
        vocab: source words, each with its own target word; word k is drawn with weight
            1 / (k + 1) ** zipf, so a flat ``zipf`` makes many words rare.
        swap: the chance that a word trades places with the next (never with its twin, which
            would make the gold ambiguous).
        tgt_unaligned, src_unaligned: (how many words with no counterpart, the chance that one
            comes before each word of that side).
        cognates: a target word is its source word + "en", as if spelled alike.
        prefix: of every word, to keep another corpus's vocabulary apart.
    """
    rng = random.Random(seed)
    taken: set[str] = set()
    src_words = [_new_word(rng, 5, taken, prefix) for _ in range(vocab)]
    translation = {
        word: word + "en" if cognates else _new_word(rng, 5, taken, prefix) for word in src_words
    }
    tgt_extra = [_new_word(rng, 2, taken, prefix) for _ in range(tgt_unaligned[0])]
    src_extra = [_new_word(rng, 3, taken, prefix) for _ in range(src_unaligned[0])]
    weights = [1 / (k + 1) ** zipf for k in range(vocab)]
    pairs: list[Pair] = []
    gold: list[set[Link]] = []
    for _ in range(num_pairs):
        words = rng.choices(src_words, weights, k=rng.randint(4, 9))
        order = list(range(len(words)))
        k = 0
        while k < len(words) - 1:
            if rng.random() < swap and words[order[k]] != words[order[k + 1]]:
                order[k], order[k + 1] = order[k + 1], order[k]
                k += 2
            else:
                k += 1
        tgt: list[str] = []
        tgt_position: dict[int, int] = {}  # word -> where its translation went
        for i in order:
            if tgt_extra and rng.random() < tgt_unaligned[1]:
                tgt.append(rng.choice(tgt_extra))
            tgt_position[i] = len(tgt)
            tgt.append(translation[words[i]])
        src: list[str] = []
        links: set[Link] = set()
        for i, word in enumerate(words):
            if src_extra and rng.random() < src_unaligned[1]:
                src.append(rng.choice(src_extra))
            links.add((len(src), tgt_position[i]))
            src.append(word)
        pairs.append((src, tgt))
        gold.append(links)
    return Corpus(pairs, gold)


def learn_aers(
    corpus: Corpus,
    methods: tuple[str, ...],
    *,
    distortion: str,
    epochs: int,
    agreement: float = 0.0,
    char_ngrams: bool = False,
    spelling: bool = False,
    repeat: int = 1,
    extra: Corpus | None = None,
) -> dict[str, float]:
    """Learn an aligner pair on the corpus and return the AER of each extraction method."""
    config = LearnConfig(
        aligner=AlignerConfig(
            dim=32,
            rnn_size=32,
            distortion=distortion,
            char_ngrams=char_ngrams,
            spelling=spelling,
        ),
        epochs=epochs,
        max_tokens=200,
        lr=1e-2,
        repeat=repeat,
        agreement=agreement,
        seed=SEED,
    )
    aligner, _ = learn(
        corpus.pairs, config, extra=extra.pairs if extra else (), show_progress=False
    )
    posteriors = aligner.posteriors(corpus.pairs)
    gold = [(links, links) for links in corpus.gold]
    aers = {}
    for method in methods:
        predicted = (extract.links(fwd, rev, method=method) for fwd, rev in posteriors)
        aers[method] = alignment_error_rate(predicted, gold).aer
    return aers


def plain_attention(
    corpus: Corpus, epochs: int, *, extra: Corpus | None = None, repeat: int = 1
) -> float:
    """The baseline: plain soft attention, no agreement, each target word's argmax."""
    aers = learn_aers(
        corpus, ("forward",), distortion="attention", epochs=epochs, extra=extra, repeat=repeat
    )
    return aers["forward"]


# ---- a reordered corpus: the HMM's jumps, and soft extraction -----------------------------------

REORDERED_EPOCHS = 12


@pytest.fixture(scope="module")
def reordered() -> Corpus:
    """300 pairs of 40 words, frequent ones often twice in a sentence, 30 % of neighbours
    swapped, a fifth of the target words unaligned."""
    return make_corpus(11, num_pairs=300, vocab=40, zipf=1.0)


@pytest.fixture(scope="module")
def reordered_attention(reordered: Corpus) -> dict[str, float]:
    return learn_aers(
        reordered, ("forward", "soft"), distortion="attention", epochs=REORDERED_EPOCHS
    )


def test_hmm_distortion_beats_plain_attention(
    reordered: Corpus, reordered_attention: dict[str, float]
) -> None:
    """The jump model places a repeated word by where its neighbours went."""
    hmm = learn_aers(reordered, ("forward", "soft"), distortion="hmm", epochs=REORDERED_EPOCHS)
    plain = reordered_attention["forward"]
    assert hmm["soft"] < 0.7 * plain, (hmm, plain)
    assert hmm["forward"] < 0.7 * plain, (hmm, plain)  # the distortion alone, same extraction


def test_soft_extraction_beats_forward_argmax(reordered_attention: dict[str, float]) -> None:
    """Links both directions believe in on average beat one direction's argmax (which here
    leaves frequent words to NULL), read off the very same aligner."""
    assert reordered_attention["soft"] < 0.7 * reordered_attention["forward"], reordered_attention


# ---- rare words and many unaligned words: agreement ------------------------------------------

GARBAGE_EPOCHS = 12


@pytest.fixture(scope="module")
def garbage() -> Corpus:
    """200 pairs over 300 words (most seen once or twice), with 40 % of the target and 30 % of
    the source words unaligned: rare words tend to collect the unaligned words of the other side
    (Moore's 'garbage collectors')."""
    return make_corpus(
        6,
        num_pairs=200,
        vocab=300,
        zipf=0.5,
        tgt_unaligned=(20, 0.4),
        src_unaligned=(20, 0.3),
    )


@pytest.fixture(scope="module")
def garbage_hmm_apart(garbage: Corpus) -> dict[str, float]:
    methods = ("forward", "reverse", "soft")
    return learn_aers(garbage, methods, distortion="hmm", epochs=GARBAGE_EPOCHS, agreement=0.0)


def test_agreement_cuts_each_directions_errors(
    garbage: Corpus, garbage_hmm_apart: dict[str, float]
) -> None:
    """Training both directions toward the links they agree on roughly halves the errors of
    each direction's own argmax links, and beats plain attention by far."""
    methods = ("forward", "reverse", "soft")
    agreed = learn_aers(garbage, methods, distortion="hmm", epochs=GARBAGE_EPOCHS, agreement=1.0)
    apart = garbage_hmm_apart
    assert agreed["forward"] < 0.7 * apart["forward"], (agreed, apart)
    assert agreed["reverse"] < 0.8 * apart["reverse"], (agreed, apart)
    plain = plain_attention(garbage, GARBAGE_EPOCHS)
    assert agreed["soft"] < 0.5 * plain and agreed["forward"] < 0.5 * plain, (agreed, plain)


def test_soft_extraction_beats_forward_argmax_of_an_hmm(
    garbage_hmm_apart: dict[str, float],
) -> None:
    """Where each direction's argmax links garbage, their mean posterior does not."""
    assert garbage_hmm_apart["soft"] < 0.7 * garbage_hmm_apart["forward"], garbage_hmm_apart


# ---- cognates: character n-grams and spelling ---------------------------------------------------

COGNATE_EPOCHS = 10


@pytest.fixture(scope="module")
def cognates() -> Corpus:
    """150 pairs over 400 words (a flat Zipf: a quarter of them seen once), each target word
    spelled like its source ('abcde' -> 'abcdeen')."""
    return make_corpus(3, num_pairs=150, vocab=400, zipf=0.3, cognates=True, swap=0.3)


@pytest.fixture(scope="module")
def cognates_words_only(cognates: Corpus) -> dict[str, float]:
    """The HMM aligner whose lexicon sees word ids only."""
    return learn_aers(cognates, ("soft", "forward"), distortion="hmm", epochs=COGNATE_EPOCHS)


@pytest.fixture(scope="module")
def cognates_plain(cognates: Corpus) -> float:
    return plain_attention(cognates, COGNATE_EPOCHS)


def test_char_ngrams_align_rare_cognates(
    cognates: Corpus, cognates_words_only: dict[str, float], cognates_plain: float
) -> None:
    """With target words spelled like their sources and a quarter of the words seen once, the
    lexicon that sees spelling links the rare words that the word-only one cannot."""
    spelled = learn_aers(
        cognates, ("soft",), distortion="hmm", epochs=COGNATE_EPOCHS, char_ngrams=True
    )
    words_only = cognates_words_only
    assert spelled["soft"] < 0.5 * words_only["soft"], (spelled, words_only)
    assert spelled["soft"] < 0.3 * cognates_plain, (spelled, cognates_plain)


def test_spelling_similarity_aligns_rare_cognates(
    cognates: Corpus, cognates_words_only: dict[str, float], cognates_plain: float
) -> None:
    """Adding a learned multiple of two words' trigram Dice to the lexicon's logits links a word
    seen once to the one word of its sentence pair spelled like it, where word ids alone leave
    the aligner guessing: far fewer errors than the same HMM aligner without it, and than plain
    attention, with either extraction."""
    methods = ("soft", "forward")
    spelled = learn_aers(cognates, methods, distortion="hmm", epochs=COGNATE_EPOCHS, spelling=True)
    words_only, plain = cognates_words_only, cognates_plain
    for method in methods:  # the feature alone: same distortion, same extraction
        assert spelled[method] < 0.3 * words_only[method], (method, spelled, words_only)
    assert spelled["soft"] < 0.1 * plain, (spelled, plain)
    assert spelled["forward"] < 0.1 * plain, (spelled, plain)  # plain's own extraction


# ---- a small text beside a large extra corpus: repeat -------------------------------------------


def test_repeating_the_text_to_align_beats_a_large_extra_corpus() -> None:
    """60 pairs to align beside 1000 extra pairs of another vocabulary: oversampling the 60
    lets the aligner learn their words within the same epochs."""
    small = make_corpus(3, num_pairs=60, vocab=40, zipf=0.7)
    extra = make_corpus(103, num_pairs=1000, vocab=100, zipf=1.0, prefix="x")
    epochs = 3
    once = learn_aers(small, ("soft",), distortion="hmm", epochs=epochs, extra=extra, repeat=1)
    often = learn_aers(small, ("soft",), distortion="hmm", epochs=epochs, extra=extra, repeat=10)
    assert often["soft"] < 0.6 * once["soft"], (often, once)
    plain = plain_attention(small, epochs, extra=extra, repeat=1)
    assert often["soft"] < 0.3 * plain, (often, plain)
