"""`nmtkit align --learn` and `--aligner`: Pharaoh output, gold scores, saved aligners, and one-line
errors for bad input and bad usage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from nmtkit.alignment.gold import alignment_error_rate, report_line
from nmtkit.alignment.neural.aligners import AlignerEnsemble
from nmtkit.alignment.pharaoh import read_pharaoh
from tests.cli.runs import Invoke
from tests.cli.test_cli_errors import assert_user_error, write_lines

SOURCE = [
    "das haus ist klein",
    "das buch ist gross",
    "ein haus",
    "das kleine buch",
    "ein buch ist klein",
    "das haus ist gross",
]
TARGET = [
    "the house is small",
    "the book is big",
    "a house",
    "the small book",
    "a book is small",
    "the house is big",
]
# 1-based 'i-j' links, as the Hansards gold writes them; the last pair's are left unscored
GOLD_ONE_INDEXED = [
    "1-1 2-2 3-3 4-4",
    "1-1 2-2 3-3 4-4",
    "1-1 2-2",
    "1-1 2p2 3-3",
    "1-1 2-2 3-3 4-4",
    "",
]
PHARAOH_LINE = re.compile(r"(?:[0-9]+-[0-9]+(?: [0-9]+-[0-9]+)*)?")
SCORE_LINE = re.compile(r"[0-9]+\.[0-9]{2}\t[0-9]+\.[0-9]{2}\t[0-9]+\.[0-9]{2}")
QUICK = ["--epochs", "2", "--repeat", "2", "--threads", "1", "-q"]


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    return write_lines(tmp_path / "src.de", SOURCE), write_lines(tmp_path / "tgt.en", TARGET)


def learn_args(corpus: tuple[Path, Path], *extra: str) -> list[str]:
    src, tgt = corpus
    return ["align", "--learn", "--source", str(src), "--target", str(tgt), *QUICK, *extra]


def links_in_range(path: Path) -> list[str]:
    """The Pharaoh lines of ``path``, checked against the corpus's word counts."""
    lines = path.read_text("utf-8").splitlines()
    assert len(lines) == len(SOURCE)
    for line, src, tgt in zip(lines, SOURCE, TARGET, strict=True):
        assert PHARAOH_LINE.fullmatch(line), line
        for token in line.split():
            i, j = (int(n) for n in token.split("-"))
            assert i < len(src.split()) and j < len(tgt.split()), (token, src, tgt)
    return lines


# ---------------------------------------------------------------------------- output and scores


def test_learn_writes_one_pharaoh_line_per_pair_to_the_output(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.align"
    out.write_text("stale\n", "utf-8")  # replaced whole
    result = cli(learn_args(corpus, "--output", str(out)))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    links_in_range(out)
    # written through a temporary file renamed into place: nothing else is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.align", "src.de", "tgt.en"]


def test_learn_writes_links_to_stdout_without_output(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    result = cli(learn_args(corpus, "--method", "grow-diag-final-and"))
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == len(SOURCE)
    assert all(PHARAOH_LINE.fullmatch(line) for line in result.stdout.splitlines())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.de", "tgt.en"]


def test_learn_scores_its_links_against_a_one_indexed_gold(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    gold = write_lines(tmp_path / "gold.align", GOLD_ONE_INDEXED)
    out = tmp_path / "out.align"
    args = learn_args(corpus, "--output", str(out), "--gold", str(gold), "--gold-one-indexed")
    result = cli(args)
    assert result.exit_code == 0, result.output
    assert SCORE_LINE.fullmatch(result.stdout.strip()), result.stdout
    # the line scores the links written, against the gold read one-indexed
    predicted = [possible for _, possible in read_pharaoh(out)]
    expected = alignment_error_rate(predicted, read_pharaoh(gold, one_indexed=True))
    assert result.stdout == report_line(expected) + "\n"


def test_learn_with_a_gold_and_no_output_prints_only_the_scores(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    gold = write_lines(tmp_path / "gold.align", GOLD_ONE_INDEXED)
    result = cli(learn_args(corpus, "--gold", str(gold), "--gold-one-indexed"))
    assert result.exit_code == 0, result.output
    assert SCORE_LINE.fullmatch(result.stdout.strip()), result.stdout
    assert len(result.stdout.splitlines()) == 1


def test_a_saved_aligner_reproduces_the_learned_links(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    aligner, learned, again = tmp_path / "pair.aligner", tmp_path / "a.align", tmp_path / "b.align"
    args = learn_args(corpus, "--save-aligner", str(aligner), "--output", str(learned))
    result = cli([*args, "--method", "union"])
    assert result.exit_code == 0, result.output
    assert aligner.is_file()
    src, tgt = (str(path) for path in corpus)
    result = cli(
        [
            *("align", "--aligner", str(aligner), "--source", src, "--target", tgt),
            *("--method", "union", "--output", str(again), "-q"),
        ]
    )
    assert result.exit_code == 0, result.output
    assert links_in_range(again) == links_in_range(learned)


@pytest.mark.parametrize(
    ("flag", "spelling"), [([], True), (["--no-spelling"], False)], ids=["default", "no-spelling"]
)
def test_spelling_is_on_by_default_and_off_with_no_spelling(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path, flag: list[str], spelling: bool
) -> None:
    """The saved aligner says which was learned: with spelling, the scores of the alike words
    that share a pair ('ist' / 'is') travel with it."""
    aligner, out = tmp_path / "pair.aligner", tmp_path / "out.align"
    src, tgt = (str(path) for path in corpus)
    result = cli(
        [
            *("align", "--learn", "--source", src, "--target", tgt, *flag),
            *("--epochs", "1", "--repeat", "1", "--threads", "1", "-q"),
            *("--save-aligner", str(aligner), "--output", str(out)),
        ]
    )
    assert result.exit_code == 0, result.output
    links_in_range(out)
    ensemble = AlignerEnsemble.load(aligner)
    assert len(ensemble.members) == 4  # --members 4 by default
    loaded = ensemble.members[0]
    assert loaded.config.spelling is spelling
    if spelling:
        assert loaded.spelling is not None
        src_words, tgt_words = loaded.src_vocab.words, loaded.tgt_vocab.words
        cells = {
            (src_words[s], tgt_words[t])
            for s, t in zip(loaded.spelling[0], loaded.spelling[1], strict=True)
        }
        assert ("ist", "is") in cells
    else:
        assert loaded.spelling is None


def test_blank_lines_get_empty_link_lines(cli: Invoke, tmp_path: Path) -> None:
    """Enough blank pairs to fill whole batches of their own (a corpus with blank separators)."""
    blanks = [""] * 4100
    src = write_lines(tmp_path / "src.de", [*blanks, *SOURCE, "das haus", ""])
    tgt = write_lines(tmp_path / "tgt.en", [*blanks, *TARGET, "", "the house"])
    out = tmp_path / "out.align"
    result = cli(learn_args((src, tgt), "--output", str(out), "--method", "union"))
    assert result.exit_code == 0, result.output
    lines = out.read_text("utf-8").splitlines()
    assert len(lines) == len(blanks) + len(SOURCE) + 2
    assert lines[: len(blanks)] == blanks and lines[-2:] == ["", ""]


# ---------------------------------------------------------------------------- errors


def test_line_counts_that_differ_name_both_files(cli: Invoke, tmp_path: Path) -> None:
    src = write_lines(tmp_path / "src.de", SOURCE)
    tgt = write_lines(tmp_path / "tgt.en", TARGET[:-1])
    out = write_lines(tmp_path / "out.align", ["kept"])
    result = cli(learn_args((src, tgt), "--output", str(out)))
    assert_user_error(result, 1, f"src.de has {len(SOURCE)} lines", f"tgt.en has {len(SOURCE) - 1}")
    assert result.stdout == ""
    assert out.read_text("utf-8") == "kept\n"  # left as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.align", "src.de", "tgt.en"]


def test_a_missing_source_file_is_named(cli: Invoke, tmp_path: Path) -> None:
    tgt = write_lines(tmp_path / "tgt.en", TARGET)
    result = cli(learn_args((tmp_path / "nowhere.de", tgt)))
    assert_user_error(result, 1, "nowhere.de")
    assert result.stdout == ""


def test_learn_with_a_model_is_a_usage_error(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    result = cli([*learn_args(corpus), "--model", str(tmp_path)])
    assert_user_error(result, 2, "--learn", "--model")


def test_learn_with_an_aligner_is_a_usage_error(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    result = cli([*learn_args(corpus), "--aligner", str(tmp_path / "pair.aligner")])
    assert_user_error(result, 2, "--learn and --aligner")


@pytest.mark.parametrize("kind", ["text", "torch-dict", "missing"])
def test_an_aligner_file_that_is_not_one_is_named(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "pair.aligner"
    if kind == "text":
        path.write_text("the house\n", "utf-8")
    elif kind == "torch-dict":
        torch.save({"model": torch.zeros(2)}, path)
    src, tgt = (str(p) for p in corpus)
    result = cli(["align", "--aligner", str(path), "--source", src, "--target", tgt, "-q"])
    error = assert_user_error(result, 1, "pair.aligner")
    assert "aligner" in error.split("pair.aligner", 1)[1]
    assert result.stdout == ""


def test_an_aligner_meeting_an_unseen_word_names_the_pair(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    aligner = tmp_path / "pair.aligner"
    result = cli(learn_args(corpus, "--save-aligner", str(aligner), "--output", "-"))
    assert result.exit_code == 0, result.output
    src = write_lines(tmp_path / "new.de", ["das haus", "das auto"])
    tgt = write_lines(tmp_path / "new.en", ["the house", "the car"])
    result = cli(["align", "--aligner", str(aligner), "--source", str(src), "--target", str(tgt)])
    assert_user_error(result, 1, "pair 2", "'auto'")
    assert result.stdout == ""


@pytest.mark.parametrize(
    "extra",
    [
        ["--extra-source", "{src}"],
        ["--extra-source", "{src}", "--extra-source", "{src}", "--extra-target", "{tgt}"],
    ],
    ids=["no-target", "two-sources-one-target"],
)
def test_extra_sources_and_targets_must_pair_up(
    cli: Invoke, corpus: tuple[Path, Path], extra: list[str]
) -> None:
    src, tgt = (str(path) for path in corpus)
    options = [option.format(src=src, tgt=tgt) for option in extra]
    result = cli(learn_args(corpus, *options))
    assert_user_error(result, 2, "--extra-source", "--extra-target")
    assert result.stdout == ""


def test_unknown_method_lists_the_methods_before_learning(
    cli: Invoke, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    aligner = tmp_path / "pair.aligner"
    result = cli(learn_args(corpus, "--method", "argmax", "--save-aligner", str(aligner)))
    assert_user_error(result, 2, "'argmax'", "soft", "grow-diag-final-and")
    assert not aligner.exists()  # refused before any learning


def test_unknown_distortion_lists_the_distortions(cli: Invoke, corpus: tuple[Path, Path]) -> None:
    result = cli(learn_args(corpus, "--distortion", "ibm4"))
    assert_user_error(result, 2, "'ibm4'", "hmm", "attention")
    assert result.stdout == ""
