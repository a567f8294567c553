"""Tests for nmtkit.data.text: preparation, SentencePiece round trips, word merging, cleaning."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sacremoses import MosesDetokenizer, MosesTokenizer

from nmtkit.data.dedup import pair_digests
from nmtkit.data.text import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIAL_PIECES,
    UNK_ID,
    CleanSettings,
    PairCleaner,
    TextPipeline,
    TextPreparer,
    TextSettings,
    clean_reason,
    train_sentencepiece,
    word_index,
    words,
)
from nmtkit.errors import ConfigError, DataError

WORD_START = "\u2581"


def _read_gz(path: Path, limit: int | None = None) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as stream:
        lines = stream.read().split("\n")
    return [line for line in lines if line][:limit]


@pytest.fixture(scope="module")
def multi30k(shared_data: Path) -> Path:
    return shared_data / "multi30k"


@pytest.fixture(scope="module")
def train_en(multi30k: Path) -> list[str]:
    return _read_gz(multi30k / "train.en.gz", 5000)


@pytest.fixture(scope="module")
def val_en(multi30k: Path) -> list[str]:
    return _read_gz(multi30k / "val.en.gz")


def _pipeline(settings: TextSettings, train: list[str], vocab_size: int = 1000) -> TextPipeline:
    preparer = TextPreparer(settings, "en")
    model = train_sentencepiece(
        (preparer.prepare(line) for line in train), model_type="bpe", vocab_size=vocab_size
    )
    return TextPipeline(settings, "en", model)


@pytest.fixture(scope="module")
def plain_pipeline(train_en: list[str]) -> TextPipeline:
    return _pipeline(TextSettings(normalize=False), train_en)


def test_decode_inverts_encode_on_multi30k_val_lines(
    plain_pipeline: TextPipeline, val_en: list[str]
) -> None:
    for line in val_en:
        ids = plain_pipeline.encode(line)
        assert UNK_ID not in ids
        assert plain_pipeline.decode(ids) == line


def test_decode_returns_normalized_text_when_normalizing(
    train_en: list[str], val_en: list[str]
) -> None:
    pipeline = _pipeline(TextSettings(normalize=True), train_en[:2000], vocab_size=500)
    for line in val_en[:300]:
        assert pipeline.decode(pipeline.encode(line)) == pipeline.prepare(line)


def test_decode_undoes_moses_tokenization_as_sacremoses_does(
    train_en: list[str], val_en: list[str]
) -> None:
    settings = TextSettings(normalize=False, moses_tokenize=True)
    pipeline = _pipeline(settings, train_en[:2000], vocab_size=500)
    tokenizer, detokenizer = MosesTokenizer("en"), MosesDetokenizer("en")
    exact = 0
    for line in val_en[:300]:
        moses = detokenizer.detokenize(tokenizer.tokenize(line, escape=False), unescape=False)
        decoded = pipeline.decode(pipeline.encode(line))
        assert decoded == moses
        exact += decoded == line
    assert exact >= 0.99 * 300  # Moses detokenization is lossy on a few lines


def test_decode_drops_pad_bos_eos_but_shows_unk(plain_pipeline: TextPipeline) -> None:
    ids = plain_pipeline.encode("A dog runs.")
    assert plain_pipeline.decode([BOS_ID, *ids, EOS_ID, PAD_ID, PAD_ID]) == "A dog runs."
    assert "\u2047" in plain_pipeline.decode([*ids, UNK_ID])


def test_encode_adds_no_eos_and_pieces_match_ids(plain_pipeline: TextPipeline) -> None:
    line = "Two dogs play in the snow."
    ids = plain_pipeline.encode(line)
    assert EOS_ID not in ids and BOS_ID not in ids
    assert plain_pipeline.id_to_piece(ids) == plain_pipeline.pieces(line)


def test_pieces_spell_the_whitespace_words_of_multi30k_lines(
    plain_pipeline: TextPipeline, val_en: list[str]
) -> None:
    for line in val_en:
        assert words(plain_pipeline.pieces(line)) == line.split()


@pytest.mark.parametrize(
    ("settings", "line", "expected"),
    [
        (TextSettings(normalize=False), "  „Hi“  ,  you ", "  „Hi“  ,  you "),
        (TextSettings(normalize=True), "„Hi“  ,  you", '"Hi" , you'),
        (TextSettings(normalize=True), "He said «ok» – fine…", 'He said "ok" - fine...'),
        (TextSettings(normalize=False, moses_tokenize=True), "Hi, you!", "Hi , you !"),
        (TextSettings(normalize=False, moses_tokenize=True), "A & B", "A & B"),
        (TextSettings(normalize=False, lowercase=True), "A Dog", "a dog"),
    ],
)
def test_prepare_applies_the_configured_steps(
    settings: TextSettings, line: str, expected: str
) -> None:
    assert TextPreparer(settings, "en").prepare(line) == expected


def test_pipeline_survives_pickling(plain_pipeline: TextPipeline) -> None:
    copy = pickle.loads(pickle.dumps(plain_pipeline))
    assert copy.encode("A red car.") == plain_pipeline.encode("A red car.")
    assert copy.spm_model == plain_pipeline.spm_model


def test_pipeline_rejects_bytes_that_are_not_a_model() -> None:
    with pytest.raises(DataError, match="not a SentencePiece model"):
        TextPipeline(TextSettings(), "en", b"not a model")


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_train_sentencepiece_is_deterministic(train_en: list[str], model_type: str) -> None:
    first = train_sentencepiece(train_en[:500], model_type=model_type, vocab_size=300)
    second = train_sentencepiece(train_en[:500], model_type=model_type, vocab_size=300)
    assert first == second


def test_train_sentencepiece_uses_nmtkit_special_ids(plain_pipeline: TextPipeline) -> None:
    ids = [PAD_ID, UNK_ID, BOS_ID, EOS_ID]
    assert plain_pipeline.id_to_piece(ids) == list(SPECIAL_PIECES)
    assert plain_pipeline.vocab_size == 1000


def test_train_sentencepiece_shrinks_vocab_on_tiny_corpus() -> None:
    model = train_sentencepiece(["a b c", "b c a"], model_type="unigram", vocab_size=100)
    assert TextPipeline(TextSettings(), "en", model).vocab_size < 100


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"model_type": "bep", "vocab_size": 100}, "did you mean 'bpe'"),
        ({"model_type": "bpe", "vocab_size": 4}, "vocab_size must exceed"),
        ({"model_type": "bpe", "vocab_size": 6}, "distinct characters"),
    ],
)
def test_train_sentencepiece_rejects_bad_settings(kwargs: dict, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        train_sentencepiece(["abcdefghij klmnop"], **kwargs)


def test_train_sentencepiece_needs_lines() -> None:
    with pytest.raises(DataError, match="no lines"):
        train_sentencepiece([], model_type="bpe", vocab_size=100)


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        ([], []),
        (["▁A", "▁man"], [0, 1]),
        (["▁Ein", "▁Mann", "es"], [0, 1, 1]),
        (["x", "y", "▁z"], [0, 0, 1]),
        (["▁", "A", "▁man"], [0, 0, 1]),
        (["▁a", "▁", "(", "b"], [0, 1, 1, 1]),
        (["▁a", "▁", "▁", "b"], [0, 1, 1, 1]),
        (["▁a", "▁"], [0, 0]),
        (["▁"], [0]),
    ],
)
def test_word_index_examples(pieces: list[str], expected: list[int]) -> None:
    assert word_index(pieces) == expected


_word = st.text(st.characters(exclude_categories=("Zs", "Cc")), min_size=1, max_size=8).filter(
    lambda w: WORD_START not in w and w.split() == [w]
)


@st.composite
def _segmented(draw: st.DrawFn) -> tuple[list[str], list[str], list[int]]:
    """Draw words, cut each into pieces, and mark word starts as SentencePiece does."""
    sentence = draw(st.lists(_word, min_size=1, max_size=8))
    pieces: list[str] = []
    index: list[int] = []
    for number, word in enumerate(sentence):
        cuts = (
            sorted(draw(st.sets(st.integers(1, len(word) - 1), max_size=3)))
            if len(word) > 1
            else []
        )
        parts = [word[a:b] for a, b in zip([0, *cuts], [*cuts, len(word)], strict=True)]
        if draw(st.booleans()):  # a bare '▁' piece before the word, as spm emits before '('
            parts = [WORD_START, *parts]
        else:
            parts[0] = WORD_START + parts[0]
        pieces += parts
        index += [number] * len(parts)
    return sentence, pieces, index


@settings(max_examples=50)
@given(_segmented())
def test_words_recovers_the_segmented_words(case: tuple[list[str], list[str], list[int]]) -> None:
    sentence, pieces, index = case
    assert word_index(pieces) == index
    assert words(pieces) == sentence


@given(st.lists(st.sampled_from(["▁", "▁a", "a", "b", "▁bc"]), max_size=12))
def test_word_index_starts_at_zero_and_steps_by_at_most_one(pieces: list[str]) -> None:
    index = word_index(pieces)
    assert len(index) == len(pieces)
    assert index[:1] in ([], [0])
    assert all(b - a in (0, 1) for a, b in zip(index, index[1:], strict=False))
    assert len(words(pieces)) == (index[-1] + 1 if index else 0)
    assert "".join(words(pieces)) == "".join(pieces).replace("▁", "")


@pytest.mark.parametrize(
    ("src", "tgt", "settings", "expected"),
    [
        ("a b", "c d", CleanSettings(), None),
        (None, "c d", CleanSettings(), "invalid_utf8"),
        ("a b", None, CleanSettings(), "invalid_utf8"),
        ("", "c d", CleanSettings(), "empty"),
        ("a b", "   ", CleanSettings(), "empty"),
        ("a", "c d", CleanSettings(min_len=2), "too_short"),
        ("a " * 251, "c " * 250, CleanSettings(), "too_long"),
        ("a " * 250, "c " * 250, CleanSettings(), None),
        ("a", "c " * 10, CleanSettings(), "ratio"),
        ("a " * 10, "c", CleanSettings(), "ratio"),
        ("a", "c " * 9, CleanSettings(), None),
        ("a " * 3, "c", CleanSettings(max_ratio=2.5), "ratio"),
    ],
)
def test_clean_reason_follows_moses_clean_corpus(
    src: str | None, tgt: str | None, settings: CleanSettings, expected: str | None
) -> None:
    assert clean_reason(src, tgt, settings) == expected


def test_pair_cleaner_drops_repeats_only_when_deduplicating() -> None:
    pairs = [("a b", "c d"), ("a b", "c d"), ("a b", "c e"), ("", "x"), ("a b", "c d")]
    kept = PairCleaner(CleanSettings())
    assert [kept.reason(s, t) for s, t in pairs] == [None, None, None, "empty", None]
    dedup = PairCleaner(CleanSettings(dedup=True))
    reasons = [dedup.reason(s, t) for s, t in pairs]
    assert reasons == [None, "duplicate", None, "empty", "duplicate"]
    assert dedup.counts["duplicate"] == 2 and dedup.counts["empty"] == 1


@pytest.mark.parametrize(
    "kwargs", [{"min_len": 0}, {"min_len": 5, "max_len": 4}, {"max_ratio": 0.5}]
)
def test_clean_settings_reject_impossible_bounds(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        CleanSettings(**kwargs)


def test_text_settings_round_trip_through_dicts_coerced_like_config_values() -> None:
    settings = TextSettings(normalize=False, lowercase=True)
    assert TextSettings.from_dict(settings.to_dict()) == settings
    # the one validator of nmtkit.config: values are coerced by declared type, as YAML is read
    assert TextSettings.from_dict({"normalize": "no", "lowercase": "yes"}) == settings
    assert TextSettings.from_dict({}) == TextSettings()


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"lowercse": True}, r"text\.lowercse: unknown key 'lowercse'.*did you mean 'lowercase'"),
        ({"normalize": [True]}, r"text\.normalize must be bool, got \[True\]"),
        ({"normalize": "maybe"}, r"text\.normalize must be bool"),
    ],
)
def test_text_settings_from_dict_rejects_bad_keys_and_values(data: dict, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        TextSettings.from_dict(data)


def test_pair_cleaner_keeps_chunks_as_it_keeps_single_pairs() -> None:
    pairs = [("a b", "c d"), ("e", "f"), ("a b", "c d"), ("e", "f"), ("g", "h")]
    single = PairCleaner(CleanSettings(dedup=True))
    kept_single = [single.reason(s, t) is None for s, t in pairs]
    chunked = PairCleaner(CleanSettings(dedup=True))
    digests = pair_digests([s for s, _ in pairs], [t for _, t in pairs])
    kept = chunked.keep_new(digests[:3]) + chunked.keep_new(digests[3:])
    assert kept == kept_single == [True, True, False, False, True]
    assert chunked.counts == single.counts
    assert PairCleaner(CleanSettings()).keep_new(digests) == [True] * 5
