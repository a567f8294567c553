"""Pharaoh gold files and alignment quality: precision, recall, AER (Och & Ney, 2003)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nmtkit.alignment.gold import (
    AlignmentScores,
    GoldFile,
    alignment_error_rate,
    report_json,
    report_line,
    score_alignment_file,
)
from nmtkit.alignment.pharaoh import GoldLinks, format_pharaoh, parse_pharaoh, read_pharaoh
from nmtkit.errors import DataError

Links = set[tuple[int, int]]

# ---- Pharaoh --------------------------------------------------------------------------------

_LINKS = st.sets(st.tuples(st.integers(0, 300), st.integers(0, 300)), max_size=40)


@given(_LINKS)
def test_pharaoh_round_trip(links: Links) -> None:
    line = format_pharaoh(links)
    assert parse_pharaoh(line) == (links, links)
    assert parse_pharaoh(line, reverse=True)[0] == {(j, i) for i, j in links}


@given(_LINKS)
def test_pharaoh_one_indexed_round_trip(links: Links) -> None:
    line = format_pharaoh((i + 1, j + 1) for i, j in links)
    assert parse_pharaoh(line, one_indexed=True) == (links, links)


def test_format_pharaoh_sorts_and_drops_repeats() -> None:
    assert format_pharaoh([(2, 1), (0, 0), (1, 2), (0, 0)]) == "0-0 1-2 2-1"
    assert format_pharaoh([]) == ""


@pytest.mark.parametrize(
    ("line", "options", "sure", "possible"),
    [
        ("0-0 1p2 3-1", {}, {(0, 0), (3, 1)}, {(0, 0), (1, 2), (3, 1)}),
        ("1-1 2p3", {"one_indexed": True}, {(0, 0)}, {(0, 0), (1, 2)}),
        ("0-1 2p3", {"reverse": True}, {(1, 0)}, {(1, 0), (3, 2)}),
        ("1-2 3p4", {"one_indexed": True, "reverse": True}, {(1, 0)}, {(1, 0), (3, 2)}),
        ("  0-0\t1-1  ", {}, {(0, 0), (1, 1)}, {(0, 0), (1, 1)}),
        ("", {}, set(), set()),
        ("0p0 0-0", {}, {(0, 0)}, {(0, 0)}),
    ],
    ids=["sure-and-possible", "one-indexed", "reverse", "both", "whitespace", "empty", "p-and-s"],
)
def test_parse_pharaoh(line: str, options: dict, sure: Links, possible: Links) -> None:
    assert parse_pharaoh(line, **options) == (sure, possible)


@pytest.mark.parametrize("token", ["0-", "a-b", "1:2", "0-1-2", "-1-2", "1P2", "1 - 2", "0–1"])
def test_malformed_link_is_a_data_error_naming_where(token: str) -> None:
    with pytest.raises(DataError, match="gold.txt:7") as caught:
        parse_pharaoh(f"0-0 {token}", where="gold.txt:7")
    assert "i-j" in str(caught.value)


def test_zero_in_a_one_indexed_line_is_a_data_error() -> None:
    with pytest.raises(DataError, match="one-indexed"):
        parse_pharaoh("1-1 0-2", one_indexed=True, where="x:1")


def test_read_pharaoh_reads_one_pair_per_line_and_names_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "links.txt"
    path.write_text("0-0 1p1\n\n2-1\n", encoding="utf-8")
    assert read_pharaoh(path) == [
        ({(0, 0)}, {(0, 0), (1, 1)}),
        (set(), set()),
        ({(2, 1)}, {(2, 1)}),
    ]
    path.write_text("0-0\n3-x\n", encoding="utf-8")
    with pytest.raises(DataError, match=f"{path}:2: malformed alignment link '3-x'"):
        read_pharaoh(path)


@pytest.mark.parametrize(
    ("one_indexed", "reverse", "expected"),
    [
        (False, False, ({(1, 2)}, {(1, 2), (3, 1)})),
        (True, False, ({(0, 1)}, {(0, 1), (2, 0)})),
        (False, True, ({(2, 1)}, {(2, 1), (1, 3)})),
        (True, True, ({(1, 0)}, {(1, 0), (0, 2)})),
    ],
)
def test_gold_file_reads_with_its_indexing_and_order(
    tmp_path: Path, one_indexed: bool, reverse: bool, expected: GoldLinks
) -> None:
    path = tmp_path / "gold"
    path.write_text("1-2 3p1\n", encoding="utf-8")
    assert GoldFile(path=path, one_indexed=one_indexed, reverse=reverse).read() == [expected]


def test_hansards_gold_reads_with_sure_inside_possible(shared_data: Path) -> None:
    gold = read_pharaoh(shared_data / "alignment" / "enfr.gold", one_indexed=True)
    assert len(gold) == 447
    assert all(sure <= possible for sure, possible in gold)
    assert sum(len(sure) for sure, _ in gold) > 0


# ---- precision, recall, AER --------------------------------------------------------------------

_TWO_SENTENCES: list[GoldLinks] = [
    ({(0, 0), (1, 1)}, {(0, 0), (1, 1), (1, 2), (2, 2)}),
    ({(0, 0)}, {(0, 0)}),
]
_WITH_POSSIBLE: list[GoldLinks] = [({(0, 0)}, {(0, 0), (0, 1)})]
_CORPUS: list[GoldLinks] = [
    ({(0, 0)}, {(0, 0)}),
    ({(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1), (2, 2), (3, 3)}),
]


@pytest.mark.parametrize(
    ("predicted", "gold", "precision", "recall", "aer"),
    [
        # |A| = 5, |S| = 3, |A & S| = 2, |A & P| = 3: AER = 1 - (2 + 3) / (5 + 3)
        ([{(0, 0), (1, 2), (2, 1)}, {(0, 0), (1, 1)}], _TWO_SENTENCES, 3 / 5, 2 / 3, 3 / 8),
        ([{(0, 0), (1, 1)}, {(0, 0)}], _TWO_SENTENCES, 1.0, 1.0, 0.0),
        # a possible link only: |A & S| = 0, |A & P| = 1: AER = 1 - 1 / 2
        ([{(0, 1)}], _WITH_POSSIBLE, 1.0, 0.0, 0.5),
        ([{(1, 1), (2, 2)}], [({(0, 0)}, {(0, 0)})], 0.0, 0.0, 1.0),
        ([set()], [({(0, 0), (1, 1)}, {(0, 0), (1, 1)})], 0.0, 0.0, 1.0),
        # Counts are summed before dividing: |A| = 5, |S| = 4, |A & S| = 2, |A & P| = 3.
        # (The mean of the two sentences' AERs would be (0 + 4/7) / 2.)
        ([{(0, 0)}, {(0, 0), (3, 3), (4, 4), (5, 5)}], _CORPUS, 3 / 5, 2 / 4, 4 / 9),
        # P given without the sure links still counts them as possible.
        ([{(0, 0)}], [({(0, 0)}, set())], 1.0, 1.0, 0.0),
    ],
    ids=["hand", "perfect", "possible-only", "all-wrong", "nothing-predicted", "corpus", "s-not-p"],
)
def test_alignment_error_rate_matches_hand_computed_scores(
    predicted: list[Links], gold: list[GoldLinks], precision: float, recall: float, aer: float
) -> None:
    scores = alignment_error_rate(predicted, gold)
    assert scores.precision == pytest.approx(precision)
    assert scores.recall == pytest.approx(recall)
    assert scores.aer == pytest.approx(aer)
    assert scores.num_sentences == len(gold)


def test_scores_keep_the_counts_behind_them() -> None:
    scores = alignment_error_rate([{(0, 0), (1, 2), (2, 1)}, {(0, 0), (1, 1)}], _TWO_SENTENCES)
    assert scores == AlignmentScores(
        num_sentences=2, num_predicted=5, num_sure=3, sure_hits=2, possible_hits=3
    )
    assert report_line(scores) == "60.00\t66.67\t37.50"
    record = json.loads(report_json(scores))
    assert record["aer"] == pytest.approx(0.375) and record["num_predicted"] == 5


def test_gold_sure_links_score_perfectly_on_hansards(shared_data: Path) -> None:
    gold = read_pharaoh(shared_data / "alignment" / "enfr.gold", one_indexed=True)
    scores = alignment_error_rate([sure for sure, _ in gold], gold)
    assert (scores.precision, scores.recall, scores.aer) == (1.0, 1.0, 0.0)


@pytest.mark.parametrize(
    ("predicted", "gold", "message"),
    [
        ([set()], [], "1 alignments in the predictions but 0 in the gold"),
        ([], [(set(), set())], "0 alignments in the predictions but 1 in the gold"),
        ([set()], [(set(), set())], "nothing to score"),
    ],
    ids=["more-predicted", "more-gold", "nothing-to-score"],
)
def test_alignment_error_rate_rejects_bad_input(
    predicted: list[Links], gold: list[GoldLinks], message: str
) -> None:
    with pytest.raises(DataError, match=message):
        alignment_error_rate(predicted, gold)


# ---- scoring files ----------------------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_score_alignment_file_reads_0_based_links_against_one_indexed_reversed_gold(
    tmp_path: Path,
) -> None:
    predicted = _write(tmp_path / "pred", "0-0 1-2 2-1\n0-0 1-1\n")
    # The same gold as _TWO_SENTENCES, written target-source and counted from 1.
    gold = _write(tmp_path / "gold", "1-1 2-2 3p2 3p3\n1-1\n")
    scores = score_alignment_file(predicted, GoldFile(path=gold, one_indexed=True, reverse=True))
    assert report_line(scores) == "60.00\t66.67\t37.50"


def test_score_alignment_file_names_both_files_when_line_counts_differ(tmp_path: Path) -> None:
    predicted = _write(tmp_path / "pred.align", "0-0\n1-1\n")
    gold = _write(tmp_path / "gold.align", "0-0\n1-1\n2-2\n")
    with pytest.raises(DataError) as caught:
        score_alignment_file(predicted, GoldFile(path=gold))
    assert f"2 alignments in {predicted} but 3 in {gold}" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("bad", ["pred", "gold"])
def test_score_alignment_file_names_the_file_and_line_of_a_bad_link(
    tmp_path: Path, bad: str
) -> None:
    files = {name: _write(tmp_path / name, "0-0\n0-0\n") for name in ("pred", "gold")}
    _write(files[bad], "0-0\n0-0 3-x\n")
    with pytest.raises(DataError, match=f"{files[bad]}:2: malformed alignment link '3-x'"):
        score_alignment_file(files["pred"], GoldFile(path=files["gold"]))
