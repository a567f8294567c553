"""Sentence splitting: sentencex's sentences with the line's own whitespace, and joining back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nmtkit.errors import ConfigError
from nmtkit.translation.results import Candidate, Part
from nmtkit.translation.splitting import (
    SentenceSplitter,
    SplitLine,
    check_splitting,
    join_links,
    join_parts,
)

# Sentences, punctuation and the whitespace Python's str.strip() knows (and sentencex may split
# around), so that generated lines hit boundaries, abbreviations and odd separators.
PIECES = ["Hello", "world", "Mr.", "Dr.", "e.g.", ".", "!", "?", "...", "。", "1.", "A", "b"]
SPACES = [" ", "  ", "\t", "\u00a0", "\u3000", "\r", "\x0b", "\x1c", "\u2028", ""]
LINES = st.lists(st.sampled_from(PIECES + SPACES), max_size=20).map("".join)


@pytest.fixture(scope="module")
def splitter() -> SentenceSplitter:
    return SentenceSplitter("en")


@given(line=LINES)
def test_the_sentences_join_back_to_the_line_exactly(line: str) -> None:
    split = SentenceSplitter("en").split(line)
    if line.strip():
        assert split.join(split.sentences) == line
    else:
        assert split.sentences == () and split.join([]) == ""
    assert all(s and s == s.strip() for s in split.sentences)
    assert all(not gap.strip() for gap in (split.lead, *split.gaps))
    assert len(split.gaps) == len(split.sentences)


@pytest.mark.parametrize(
    ("line", "lead", "sentences", "gaps"),
    [
        ("One. Two.", "", ("One.", "Two."), (" ", "")),
        (
            "  Hello there.  How are you?\tFine! ",
            "  ",
            ("Hello there.", "How are you?", "Fine!"),
            ("  ", "\t", " "),
        ),
        ("no boundary here", "", ("no boundary here",), ("",)),
        (
            "Mr. Smith went to Washington. He came back.",
            "",
            ("Mr. Smith went to Washington.", "He came back."),
            (" ", ""),
        ),
        ("", "", (), ()),
        (" \t ", " \t ", (), ()),
    ],
)
def test_split_gives_the_sentences_and_the_whitespace_around_them(
    splitter: SentenceSplitter,
    line: str,
    lead: str,
    sentences: tuple[str, ...],
    gaps: tuple[str, ...],
) -> None:
    assert splitter.split(line) == SplitLine(lead=lead, sentences=sentences, gaps=gaps)


def test_whitespace_that_sentencex_gives_as_a_part_of_its_own_joins_the_gap(
    splitter: SentenceSplitter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(splitter, "_segment", lambda lang, line: [" ", "A. ", "\t", " B.", " "])
    split = splitter.split(" A. \t B. ")
    assert split == SplitLine(lead=" ", sentences=("A.", "B."), gaps=(" \t ", " "))


def test_a_line_sentencex_would_change_is_kept_as_one_sentence(
    splitter: SentenceSplitter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(splitter, "_segment", lambda lang, line: ["A.", "B."])  # drops a space
    assert splitter.split(" A. B. ") == SplitLine(lead=" ", sentences=("A. B.",), gaps=(" ",))


def test_join_lays_out_other_texts_as_the_sentences_were() -> None:
    split = SplitLine(lead="  ", sentences=("One.", "Two."), gaps=("\t ", "\u00a0"))
    assert split.join(["Eins.", "Zwei."]) == "  Eins.\t Zwei.\u00a0"
    assert split.join(["", "Zwei."]) == "  \t Zwei.\u00a0"
    assert split.join(["", ""]) == ""  # nothing but whitespace: an empty line, as unsplit
    with pytest.raises(ValueError):
        split.join(["Eins."])


def test_join_links_shifts_each_sentence_by_the_words_before_it() -> None:
    links = join_links(
        [[(0, 0), (1, 1)], [], [(0, 1), (2, 0)]], num_src_words=[2, 3, 3], num_tgt_words=[2, 0, 2]
    )
    assert links == ((0, 0), (1, 1), (5, 3), (7, 2))


def test_join_parts_sums_scores_joins_texts_and_links() -> None:
    split = SplitLine(lead="", sentences=("A b.", "C."), gaps=("  ", ""))
    parts = [
        Part(source="A b.", candidate=Candidate(text="x y", score=-1.5, links=((0, 0), (1, 1)))),
        Part(source="C.", candidate=Candidate(text="z", score=-0.25, links=((0, 0),))),
    ]
    joined = join_parts(split, parts, num_src_words=[2, 1], num_tgt_words=[2, 1])
    assert joined == Candidate(text="x y  z", score=-1.75, links=((0, 0), (1, 1), (2, 2)))
    unaligned = [Part(source=p.source, candidate=Candidate(text="t", score=0.0)) for p in parts]
    assert join_parts(split, unaligned, num_src_words=[2, 1], num_tgt_words=[1, 1]).links is None


@pytest.mark.parametrize(
    ("nbest", "prefix", "message"),
    [
        (2, None, "--nbest above 1 cannot be used with --split-sentences"),
        (1, "prefix.de", "--prefix cannot be used with --split-sentences"),
    ],
)
def test_splitting_refuses_nbest_lists_and_prefixes(
    nbest: int, prefix: str | None, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        check_splitting(split_sentences=True, nbest=nbest, prefix_path=prefix)
    check_splitting(split_sentences=False, nbest=nbest, prefix_path=prefix)
