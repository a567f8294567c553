"""Sentences fall into the right length bucket; a bucket's BLEU is the BLEU of its sentences."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import sacrebleu

from nmtkit.errors import ConfigError, DataError
from nmtkit.scoring.length_buckets import (
    DEFAULT_EDGES,
    LengthBucket,
    LengthReport,
    assign_buckets,
    bleu_by_length,
    check_plot,
    parse_buckets,
    plot_bleu_by_length,
    sentence_lengths,
)
from nmtkit.scoring.metrics import corpus_bleu, score

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# Sentences of 1 to 24 words, the last one '.'; hypotheses drop the '.' of every third sentence.
REFS = [" ".join([*(f"w{k}" for k in range(n)), "."]) for n in range(24)]
HYPS = [" ".join(r.split()[:-1]) if i % 3 == 0 else r for i, r in enumerate(REFS)]
HYPS2 = [r.replace("w1 ", "x ") for r in REFS]


@pytest.mark.parametrize(
    ("lengths", "edges", "expected"),
    [
        ([0, 9, 10, 19, 20, 49, 50, 200], DEFAULT_EDGES, [0, 0, 1, 1, 2, 4, 5, 5]),
        ([0, 1, 2, 3], (0, 1, 2), [0, 1, 2, 2]),
        ([5, 100], (0,), [0, 0]),
        ([4, 5, 6], (0, 5), [0, 1, 1]),
        ([], DEFAULT_EDGES, []),
    ],
    ids=["paper-edges", "unit-width", "one-bucket", "edge-is-lower-bound", "nothing"],
)
def test_assign_buckets_puts_each_length_in_its_half_open_range(
    lengths: list[int], edges: tuple[int, ...], expected: list[int]
) -> None:
    assert assign_buckets(lengths, edges) == expected


@pytest.mark.parametrize(
    ("text", "edges"),
    [("0,10,20,30,40,50", DEFAULT_EDGES), ("0", (0,)), (" 0, 5 ,7", (0, 5, 7))],
)
def test_parse_buckets_reads_comma_separated_edges(text: str, edges: tuple[int, ...]) -> None:
    assert parse_buckets(text) == edges


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("0,10,x", "whole numbers"),
        ("0,10.5", "whole numbers"),
        ("", "whole numbers"),
        ("5,10", "first bucket edge must be 0"),
        ("0,20,10", "must increase"),
        ("0,10,10", "must increase"),
        ("-5,0", "first bucket edge must be 0"),
    ],
)
def test_bad_buckets_are_config_errors_naming_the_option(text: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as caught:
        parse_buckets(text)
    assert "--buckets" in str(caught.value)


@pytest.mark.parametrize(
    ("low", "high", "label"), [(0, 10, "0-9"), (7, 8, "7"), (50, None, "50+"), (10, 20, "10-19")]
)
def test_bucket_labels_name_the_word_counts(low: int, high: int | None, label: str) -> None:
    assert LengthBucket(low=low, high=high, num_sentences=0, bleu=()).label == label


def test_sentence_lengths_count_whitespace_separated_words() -> None:
    assert sentence_lengths(["", "a", " a  b\tc ", "Ein Mann , der ."]) == [0, 1, 3, 5]


def test_bucket_bleu_equals_corpus_bleu_of_its_sentences() -> None:
    lengths = sentence_lengths(REFS)
    edges = (0, 5, 10, 30)
    report = bleu_by_length([HYPS, HYPS2], [REFS], lengths, edges=edges)
    assert [b.num_sentences for b in report.buckets] == [4, 5, 15, 0]
    assert sum(b.num_sentences for b in report.buckets) == len(REFS)
    for k, bucket in enumerate(report.buckets[:3]):
        members = [i for i, n in enumerate(lengths) if edges[k] <= n < edges[k + 1]]
        for hyps, bleu in zip([HYPS, HYPS2], bucket.bleu, strict=True):
            subset = [hyps[i] for i in members], [REFS[i] for i in members]
            assert bleu == corpus_bleu(*subset).score
            assert bleu == pytest.approx(sacrebleu.corpus_bleu(subset[0], [subset[1]]).score)
    assert report.buckets[3].bleu == (None, None)
    assert report.signature == corpus_bleu(HYPS, REFS).signature


def test_bucket_bleu_keeps_every_reference_and_the_bleu_options() -> None:
    refs2 = [r.upper() for r in REFS]
    options = {"lowercase": True, "tokenize": "char"}
    report = bleu_by_length([HYPS], [REFS, refs2], sentence_lengths(REFS), edges=(0,), **options)
    (bucket,) = report.buckets
    expected = score(HYPS, [REFS, refs2], metrics=["bleu"], **options).scores[0]
    assert bucket.bleu == (expected.score,)
    assert report.signature == expected.signature
    assert "nrefs:2|case:lc" in report.signature and "tok:char" in report.signature


def test_to_dict_lists_buckets_with_counts_and_bleu_per_system() -> None:
    report = bleu_by_length([HYPS, HYPS2], [REFS], sentence_lengths(REFS), by="source")
    data = report.to_dict()
    assert data["by"] == "source"
    assert data["edges"] == list(DEFAULT_EDGES)
    assert [b["label"] for b in data["buckets"]] == [
        "0-9",
        "10-19",
        "20-29",
        "30-39",
        "40-49",
        "50+",
    ]
    assert data["buckets"][-1] == {
        "label": "50+",
        "low": 50,
        "high": None,
        "num_sentences": 0,
        "bleu": [None, None],
    }
    assert all(len(b["bleu"]) == 2 for b in data["buckets"])


@pytest.mark.parametrize(
    ("systems", "lengths", "options", "error"),
    [
        ([HYPS], [1, 2], {}, DataError),
        ([HYPS[:-1]], sentence_lengths(REFS), {}, DataError),
        ([[]], [], {}, DataError),
        ([HYPS], sentence_lengths(REFS), {"edges": (1, 5)}, ConfigError),
        ([HYPS], sentence_lengths(REFS), {"by": "target"}, ConfigError),
    ],
    ids=["lengths-short", "system-short", "empty", "edges-from-1", "unknown-by"],
)
def test_bad_input_raises_user_errors(
    systems: list, lengths: list[int], options: dict, error: type
) -> None:
    refs = [REFS] if systems != [[]] else [[]]
    with pytest.raises(error):
        bleu_by_length(systems, refs, lengths, **options)


def _report() -> LengthReport:
    return bleu_by_length([HYPS, HYPS2], [REFS], sentence_lengths(REFS), edges=(0, 5, 10, 30))


def test_plot_writes_a_png_with_one_line_per_system(tmp_path: Path) -> None:
    path = tmp_path / "fig2.png"
    plot_bleu_by_length(_report(), ["RNNsearch-50", "RNNsearch-30"], path, title="BLEU")
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig2.png"]


def test_plot_writes_svg_by_suffix(tmp_path: Path) -> None:
    path = tmp_path / "fig2.svg"
    plot_bleu_by_length(_report(), ["a", "b"], path)
    text = path.read_text("utf-8")
    assert text.startswith("<?xml") and "<svg" in text


def test_plot_to_an_unknown_format_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown image format.*\.png"):
        plot_bleu_by_length(_report(), ["a", "b"], tmp_path / "fig.bmp")
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ConfigError, match=r"matplotlib.*pip install nmtkit\[plot\]"):
        check_plot("fig.png")


def test_plot_into_a_missing_folder_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such folder"):
        check_plot(tmp_path / "nowhere" / "fig.png")
