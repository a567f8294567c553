"""`nmtkit score --terms`: term accuracy beside BLEU/chrF/TER in the table, lines and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import Result

from tests.cli.runs import Invoke
from tests.cli.test_cli_errors import assert_user_error, write_lines

REFS = ["Der Eiffelturm steht in Paris.", "Ich mag Katzen.", "Das Wetter ist schön.", ""]
GOOD = ["Der Eiffelturm steht in Paris.", "Ich mag Katzen.", "Das Wetter ist gut.", ""]
BAD = ["Der Turm steht in paris.", "Ich mag Katzenfutter.", "Das Wetter ist schön.", ""]
TERMS = ["Eiffelturm\tParis", "Katzen", "", ""]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "ref": write_lines(tmp_path / "ref.de", REFS),
        "good": write_lines(tmp_path / "good.de", GOOD),
        "bad": write_lines(tmp_path / "bad.de", BAD),
        "terms": write_lines(tmp_path / "terms.tsv", TERMS),
    }


def _score_good(cli: Invoke, files: dict[str, Path], terms: Path) -> Result:
    return cli(["score", "-r", str(files["ref"]), "-i", str(files["good"]), "--terms", str(terms)])


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").replace("┃", " ").split())


def test_terms_add_a_term_accuracy_line_per_system(cli: Invoke, files: dict[str, Path]) -> None:
    args = ["score", "-r", str(files["ref"]), str(files["good"]), str(files["bad"])]
    result = cli([*args, "--name", "good", "--name", "bad", "--terms", str(files["terms"])])
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [row[:2] for row in rows] == [
        *(["good", "BLEU"], ["good", "chrF"], ["good", "TER"], ["good", "TermAcc"]),
        *(["bad", "BLEU"], ["bad", "chrF"], ["bad", "TER"], ["bad", "TermAcc"]),
    ]
    assert rows[3][2:] == ["100.00", "matched:3|nterms:3|tok:13a|case:mixed|match:exact"]
    assert rows[7][2] == "0.00"
    stderr = _flat(result.stderr)
    assert "TermAcc" in stderr and "100.00 (3/3)" in stderr and "0.00 (0/3)" in stderr
    assert "TermAcc nterms:3|tok:13a" in stderr


def test_terms_in_json_give_score_counts_and_misses(cli: Invoke, files: dict[str, Path]) -> None:
    args = ["score", "-r", str(files["ref"]), "-i", str(files["bad"]), "-M", "bleu", "--json"]
    result = cli([*args, "--terms", str(files["terms"]), "--name", "bad"])
    assert result.exit_code == 0, result.output
    (accuracy,) = json.loads(result.stdout)["term_accuracy"]
    assert accuracy == {
        "system": "bad",
        "score": 0.0,
        "matched": 0,
        "total": 3,
        "misses": [
            {"line": 1, "term": "Eiffelturm"},
            {"line": 1, "term": "Paris"},
            {"line": 2, "term": "Katzen"},
        ],
    }


def test_terms_beside_a_paired_test(cli: Invoke, files: dict[str, Path]) -> None:
    args = ["score", "-r", str(files["ref"]), str(files["good"]), str(files["bad"]), "-M", "bleu"]
    result = cli([*args, "--paired-bs", "--paired-bs-n", "10", "--terms", str(files["terms"])])
    assert result.exit_code == 0, result.output
    assert "100.00 (3/3)" in _flat(result.stderr)
    assert [line.split("\t")[1] for line in result.stdout.splitlines()] == ["BLEU", "TermAcc"] * 2


def test_no_terms_no_term_accuracy(cli: Invoke, files: dict[str, Path]) -> None:
    result = cli(["score", "-r", str(files["ref"]), "-i", str(files["good"])])
    assert result.exit_code == 0, result.output
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == ["BLEU", "chrF", "TER"]
    assert "TermAcc" not in result.stderr
    result = cli(["score", "-r", str(files["ref"]), "-i", str(files["good"]), "--json"])
    assert json.loads(result.stdout)["term_accuracy"] is None


def test_a_terms_file_without_terms_scores_n_a(
    cli: Invoke, files: dict[str, Path], tmp_path: Path
) -> None:
    empty = write_lines(tmp_path / "none.tsv", [""] * len(REFS))
    result = _score_good(cli, files, empty)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].split("\t")[:2] == ["TermAcc", "n/a"]
    assert "n/a (0/0)" in _flat(result.stderr)


@pytest.mark.parametrize(
    ("lines", "line"),
    [
        pytest.param(["Paris", "a\t\tb", "", ""], 2, id="two-tabs"),
        pytest.param(["Paris", "", "\tSchnee", ""], 3, id="leading-tab"),
    ],
)
def test_a_bad_terms_file_is_one_error_line_naming_file_and_line(
    cli: Invoke, files: dict[str, Path], tmp_path: Path, lines: list[str], line: int
) -> None:
    terms = write_lines(tmp_path / "bad.tsv", lines)
    result = _score_good(cli, files, terms)
    assert_user_error(result, 1, f"{terms}:{line}:", "empty constraint")
    assert result.stdout == ""


def test_a_term_without_words_is_one_error_line_naming_file_and_line(
    cli: Invoke, files: dict[str, Path], tmp_path: Path
) -> None:
    terms = write_lines(tmp_path / "bad.tsv", ["", "", "<skipped>", ""])
    result = _score_good(cli, files, terms)
    assert_user_error(result, 1, f"{terms}:3:", "has no word")


def test_a_terms_file_of_another_length_is_one_error_line(
    cli: Invoke, files: dict[str, Path], tmp_path: Path
) -> None:
    terms = write_lines(tmp_path / "short.tsv", TERMS[:2])
    result = _score_good(cli, files, terms)
    assert_user_error(result, 1, f"{files['good']} has 4 lines but {terms} has 2")
    assert result.stdout == ""


def test_a_missing_terms_file_is_one_error_line(
    cli: Invoke, files: dict[str, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.tsv"
    result = _score_good(cli, files, missing)
    assert_user_error(result, 1, str(missing), "no such file")
