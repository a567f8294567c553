"""Several systems from files: scores per system, paired tests, BLEU by length, tables and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from nmtkit.errors import ConfigError, DataError
from nmtkit.scoring.comparison import (
    LengthOptions,
    compare_files,
    comparison_json,
    comparison_lines,
    comparison_table,
    comparison_views,
    signature_lines,
)
from nmtkit.scoring.length_buckets import bleu_by_length, sentence_lengths
from nmtkit.scoring.metrics import score_files
from nmtkit.scoring.significance import SignificanceOptions, paired_test

REFS = [
    "Ein Mann sitzt auf einem Stuhl.",
    "Zwei Hunde spielen im Schnee.",
    "Eine Frau mit einem roten Hut geht über eine sehr belebte Straße in der Stadt.",
    "Kinder spielen.",
    "Ein Junge springt von einer hohen Mauer in einen kleinen blauen Swimmingpool.",
    "Ein Mädchen liest ein Buch.",
] * 4
SRC = [" ".join(["w"] * (3 + 2 * i)) for i in range(len(REFS))]


def _worse(lines: list[str]) -> list[str]:
    return [" ".join(line.split()[1:]) for line in lines]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "ref": _write(tmp_path / "ref.de", REFS),
        "src": _write(tmp_path / "src.en", SRC),
        "base": _write(tmp_path / "base.de", REFS[:3] + _worse(REFS[3:])),
        "worse": _write(tmp_path / "worse.de", _worse(REFS)),
        "short": _write(tmp_path / "short.de", REFS[:-1]),
    }


def test_one_system_scores_as_score_files(files: dict[str, Path]) -> None:
    comparison = compare_files([files["base"]], [files["ref"]])
    assert comparison.reports == (score_files(files["base"], [files["ref"]]),)
    assert comparison.names == (str(files["base"]),)
    assert comparison.significance is None and comparison.by_length is None
    assert [line.split("\t")[0] for line in comparison_lines(comparison)] == ["BLEU", "chrF", "TER"]


def test_json_holds_systems_scores_significance_and_by_length(files: dict[str, Path]) -> None:
    comparison = compare_files(
        [files["base"], files["worse"]],
        [files["ref"]],
        names=["base", "worse"],
        metrics=["bleu", "ter"],
        significance=SignificanceOptions(num_samples=20),
        by_length=LengthOptions(edges=(0, 10), src_path=files["src"]),
    )
    data = json.loads(comparison_json(comparison))
    assert list(data) == [
        *("num_sentences", "references", "systems", "scores", "warnings"),
        *("significance", "by_length", "term_accuracy"),
    ]
    assert data["num_sentences"] == len(REFS)
    assert data["systems"] == ["base", "worse"]
    assert data["references"] == [str(files["ref"])]
    assert [(s["system"], s["name"]) for s in data["scores"]] == [
        *(("base", "BLEU"), ("base", "TER"), ("worse", "BLEU"), ("worse", "TER")),
    ]
    assert data["significance"]["baseline"] == "base"
    assert data["significance"]["test"] == "bs"
    assert data["by_length"]["by"] == "source"
    assert [b["num_sentences"] for b in data["by_length"]["buckets"]] == [4, 20]
    assert data["term_accuracy"] is None


def test_parts_equal_the_library_functions_on_the_same_lines(files: dict[str, Path]) -> None:
    options = SignificanceOptions(test="ar", num_samples=30)
    comparison = compare_files(
        [files["base"], files["worse"]],
        [files["ref"]],
        metrics=["bleu"],
        significance=options,
        by_length=LengthOptions(edges=(0, 10, 12)),
    )
    systems = [REFS[:3] + _worse(REFS[3:]), _worse(REFS)]
    assert comparison.significance == paired_test(
        systems, [REFS], options=options, metrics=["bleu"]
    )
    lengths = sentence_lengths(REFS)
    assert comparison.by_length == bleu_by_length(systems, [REFS], lengths, edges=(0, 10, 12))


def test_table_labels_the_baseline_and_marks_significant_systems(
    files: dict[str, Path], tmp_path: Path
) -> None:
    close = _write(tmp_path / "close.de", REFS[:4] + _worse(REFS[4:]))
    comparison = compare_files(
        [files["base"], files["worse"], close],
        [files["ref"]],
        names=["A", "B", "C"],
        metrics=["bleu"],
        significance=SignificanceOptions(num_samples=50),
    )
    table = comparison_table(comparison)
    assert list(table.columns[0].cells) == ["Baseline: A", "B", "C"]
    cells = list(table.columns[1].cells)
    assert "\u00b1" in cells[0] and "p =" not in cells[0]
    assert cells[1].endswith(")*") and not cells[2].endswith("*")
    assert [line.split()[0] for line in signature_lines(comparison)] == ["BLEU"]
    assert "bs:50|seed:12345" in signature_lines(comparison)[0]
    assert [line.split("\t")[:2] for line in comparison_lines(comparison)] == [
        ["A", "BLEU"],
        ["B", "BLEU"],
        ["C", "BLEU"],
    ]


def test_views_render_both_tables_with_signatures(files: dict[str, Path]) -> None:
    comparison = compare_files([files["base"]], [files["ref"]], by_length=LengthOptions())
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    views = comparison_views(comparison)
    assert [len(signatures) for _, signatures in views] == [3, 1]
    for table, signatures in views:
        console.print(table)
        for line in signatures:
            console.print(line, soft_wrap=True)
    text = console.export_text()
    assert "BLEU by reference length on 24 sentences" in text
    assert text.count("nrefs:1|case:mixed|eff:no|tok:13a") == 2
    assert "50+" in text


def test_warnings_name_their_system(files: dict[str, Path], tmp_path: Path) -> None:
    tokenized = _write(tmp_path / "tok.de", [line.replace(".", " .") for line in REFS])
    comparison = compare_files([files["base"], tokenized], [files["ref"]], metrics=["bleu"])
    (warning,) = comparison.warnings
    assert warning.startswith(f"{tokenized}: ") and "tokenized" in warning


@pytest.mark.parametrize(
    ("systems", "refs", "options", "fragments"),
    [
        (["base", "short"], ["ref"], {}, ["short.de has 23 lines", "ref.de has 24"]),
        (["short", "base"], ["ref"], {}, ["short.de has 23 lines", "ref.de has 24"]),
        (["base"], ["ref", "short"], {}, ["base.de has 24 lines", "short.de has 23"]),
        (
            ["base"],
            ["ref"],
            {"by_length": LengthOptions(src_path=Path("short"))},
            ["short.de has 23 lines", "ref.de has 24", "source"],
        ),
    ],
    ids=["second-system", "first-system", "second-ref", "source"],
)
def test_different_line_counts_name_both_files_and_counts(
    files: dict[str, Path], systems: list, refs: list, options: dict, fragments: list[str]
) -> None:
    if "by_length" in options:
        options = {"by_length": LengthOptions(src_path=files["short"])}
    with pytest.raises(DataError) as caught:
        compare_files([files[s] for s in systems], [files[r] for r in refs], **options)
    for fragment in fragments:
        assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("systems", "options", "match"),
    [
        (["-", "-"], {}, r"stdin"),
        ([], {}, r"no system"),
        (["a", "b"], {"names": ["x"]}, r"1 names given for 2 systems"),
        (["a", "b"], {"names": ["x", "x"]}, r"'x' is given twice"),
        (["a", "a"], {}, r"a' is given twice.*--name"),
        (["a"], {"significance": SignificanceOptions()}, r"two systems"),
        (["a"], {"by_length": LengthOptions(by="source")}, r"needs the source.*--source"),
        (["a"], {"by_length": LengthOptions(by="target")}, r"unknown bucket measure"),
        (["a"], {"by_length": LengthOptions(edges=(2, 4))}, r"first bucket edge must be 0"),
        (["a"], {"metrics": ["bleu", "meteor"]}, r"unknown metric"),
    ],
)
def test_bad_options_are_config_errors_before_any_file_is_read(
    tmp_path: Path, systems: list[str], options: dict, match: str
) -> None:
    missing = [s if s == "-" else str(tmp_path / s) for s in systems]
    with pytest.raises(ConfigError, match=match):
        compare_files(missing, [tmp_path / "nowhere"], **options)
