"""N-best lists: Moses and nmtkit lines read and written back, a feature replaced or appended,
each sentence's hypotheses re-sorted by the model's score, malformed lists one error line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from nmtkit.errors import ConfigError, DataError
from nmtkit.translation.forced import PairScore
from nmtkit.translation.nbest import (
    NbestEntry,
    check_feature_name,
    check_nbest,
    format_entry,
    parse_nbest_line,
    read_nbest,
    rescore_nbest,
    set_feature,
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("3 ||| ein Hund ||| -1.5", NbestEntry(index=3, text="ein Hund", features="", score=-1.5)),
        ("0 |||  ||| -2", NbestEntry(index=0, text="", features="", score=-2.0)),
        (
            "12 ||| a b ||| LM0= -3 TM0= -1 -2 ||| -4.25",
            NbestEntry(index=12, text="a b", features="LM0= -3 TM0= -1 -2", score=-4.25),
        ),
        (
            "1 ||| a b ||| F= 1 ||| 0.5 ||| 0-0 1-1",
            NbestEntry(index=1, text="a b", features="F= 1", score=0.5, rest=("0-0 1-1",)),
        ),
    ],
)
def test_nmtkit_and_moses_lines_parse(line: str, expected: NbestEntry) -> None:
    assert parse_nbest_line(line, where="x:1") == expected


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0 ||| a", "not an n-best line"),
        ("x ||| a ||| -1", "sentence number 'x'"),
        ("-1 ||| a ||| -1", "sentence number '-1'"),
        ("0 ||| a ||| F= 1 ||| high", "score 'high'"),
    ],
)
def test_a_malformed_line_is_an_error_naming_it(line: str, message: str) -> None:
    with pytest.raises(DataError, match=message) as info:
        parse_nbest_line(line, where="list.txt:7")
    assert str(info.value).startswith("list.txt:7: ")


@pytest.mark.parametrize(
    ("features", "expected"),
    [
        ("", "nmt= -1.500000"),
        ("LM0= -3 TM0= -1 -2", "LM0= -3 TM0= -1 -2 nmt= -1.500000"),
        ("nmt= -9 -8 LM0= -3", "LM0= -3 nmt= -1.500000"),
        ("LM0= -3 nmt= 4", "LM0= -3 nmt= -1.500000"),
        ("nmt2= 1", "nmt2= 1 nmt= -1.500000"),
    ],
)
def test_the_feature_is_replaced_or_appended(features: str, expected: str) -> None:
    assert set_feature(features, "nmt", -1.5) == expected


def test_a_written_line_is_moses_format_and_reads_back() -> None:
    entry = NbestEntry(index=2, text="a b", features="nmt= -1.000000", score=-1.0, rest=("0-0",))
    line = format_entry(entry)
    assert line == "2 ||| a b ||| nmt= -1.000000 ||| -1.000000 ||| 0-0\n"
    assert parse_nbest_line(line.rstrip("\n"), where="x") == entry


def write(path: Path, lines: Sequence[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_each_sentences_hypotheses_come_as_one_list(tmp_path: Path) -> None:
    nbest = write(tmp_path / "nbest", ["0 ||| a ||| -1", "0 ||| b ||| -2", "2 ||| c ||| -1"])
    groups = list(read_nbest(nbest, num_sentences=3))
    assert [[(e.index, e.text, e.line) for e in g] for g in groups] == [
        [(0, "a", 1), (0, "b", 2)],
        [(2, "c", 3)],
    ]


@pytest.mark.parametrize(
    ("lines", "where", "message"),
    [
        (["1 ||| a ||| -1", "0 ||| b ||| -1"], "nbest:2", "sentence 0 after sentence 1"),
        (["0 ||| a ||| -1", "3 ||| b ||| -1"], "nbest:2", "sentence 3, but the source has 3"),
        (["1 ||| a ||| -1"], "src:2", "empty source line"),
    ],
)
def test_an_unusable_list_is_found_before_any_scoring(
    tmp_path: Path, lines: list[str], where: str, message: str
) -> None:
    src = write(tmp_path / "src", ["x y", "", "z"])
    nbest = write(tmp_path / "nbest", lines)
    with pytest.raises(DataError, match=message) as info:
        check_nbest(src, nbest)
    assert str(info.value).startswith(f"{tmp_path / where}: ")


def test_a_bad_feature_name_is_a_usage_error() -> None:
    check_feature_name("nmt_2")
    for name in ("", "a b", "nmt=", "a|b"):
        with pytest.raises(ConfigError):
            check_feature_name(name)


class LengthScorer:
    """Scores a hypothesis by its length in characters, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def score_texts(self, src_lines: Sequence[str], tgt_lines: Sequence[str]) -> list[PairScore]:
        self.asked.extend(zip(src_lines, tgt_lines, strict=True))
        return [PairScore(log_prob=-len(t), num_tokens=1, score=float(len(t))) for t in tgt_lines]


def test_rescoring_sets_the_feature_and_resorts_each_sentence(tmp_path: Path) -> None:
    src = write(tmp_path / "src", ["s0", "s1", "s2"])
    nbest = write(
        tmp_path / "nbest",
        ["0 ||| a ||| F= 1 ||| -1", "0 ||| ccc ||| F= 2 ||| -2", "0 ||| bb ||| F= 3 ||| -3"]
        + ["2 ||| x ||| -0.5", "2 ||| yy ||| -0.7"],
    )
    out = tmp_path / "out"
    scorer = LengthScorer()
    count = rescore_nbest(scorer, src, nbest, feature="len", output=str(out))  # type: ignore[arg-type]
    assert count == 5
    assert scorer.asked == [("s0", "a"), ("s0", "ccc"), ("s0", "bb"), ("s2", "x"), ("s2", "yy")]
    assert out.read_text().splitlines() == [
        "0 ||| ccc ||| F= 2 len= 3.000000 ||| 3.000000",
        "0 ||| bb ||| F= 3 len= 2.000000 ||| 2.000000",
        "0 ||| a ||| F= 1 len= 1.000000 ||| 1.000000",
        "2 ||| yy ||| len= 2.000000 ||| 2.000000",
        "2 ||| x ||| len= 1.000000 ||| 1.000000",
    ]
