"""Glossaries and constraints files: how they are read, what a bad line says, and which source
words a glossary entry matches (whole words, any case, the longest match)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from nmtkit.data.text import WORD_START, TextPipeline
from nmtkit.errors import DataError
from nmtkit.terminology import Glossary, Term, read_constraints, read_glossary


class Pieces:
    """A stand-in source pipeline: words split off at spaces, punctuation its own word, and a
    long word cut into pieces of 4 characters, as SentencePiece would cut it."""

    def pieces(self, line: str) -> list[str]:
        out: list[str] = []
        for word in line.replace(".", " .").replace(",", " ,").split():
            out += [WORD_START + word[:4]] + [word[i : i + 4] for i in range(4, len(word), 4)]
        return out


PIPELINE = cast(TextPipeline, Pieces())


def glossary(*pairs: tuple[str, str]) -> Glossary:
    return Glossary([Term(source=s, target=t) for s, t in pairs], PIPELINE)


def targets(found: list) -> list[str]:
    return [match.term.target for match in found]


def test_a_term_matches_whole_words_in_any_case() -> None:
    terms = glossary(("platform", "Bahnsteig"), ("form", "Form"), ("dog", "Hund"))
    found = terms.find(PIPELINE.pieces("The Platform, where dogs wait."))
    assert targets(found) == ["Bahnsteig"]  # not "form" inside it, not "dog" inside "dogs"
    (match,) = found
    assert match.source_spans == ((1, 3),)  # "▁Plat" "form": the pieces of the word


def test_the_longest_match_wins_and_each_occurrence_is_kept() -> None:
    terms = glossary(("red shirt", "rotes Hemd"), ("shirt", "Hemd"), ("man", "Mann"))
    found = terms.find(PIPELINE.pieces("A man in a red shirt and a man."))
    assert targets(found) == ["Mann", "rotes Hemd"]
    assert found[0].source_spans == ((1, 2), (9, 10))
    assert found[1].source_spans == ((4, 7),)  # "▁red" "▁shir" "t"


def test_a_target_is_applied_once() -> None:
    terms = glossary(("dog", "Hund"), ("hound", "Hund"))
    assert targets(terms.find(PIPELINE.pieces("A dog and a hound."))) == ["Hund"]


def test_a_glossary_file_skips_blank_lines_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "terms.tsv"
    path.write_text("# en\tde\nplatform\tBahnsteig\n\n  red shirt \t rotes Hemd\n", "utf-8")
    entries = read_glossary(path)
    assert [(e.source, e.target) for e in entries] == [
        ("platform", "Bahnsteig"),
        ("red shirt", "rotes Hemd"),
    ]
    assert entries[1].where == f"{path}:4"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("platform", "got 1 field"),
        ("a\tb\tc", "got 3 field"),
        ("platform\t ", "empty term"),
    ],
)
def test_a_malformed_glossary_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "terms.tsv"
    path.write_text(f"dog\tHund\n{line}\n", "utf-8")
    with pytest.raises(DataError, match=message) as caught:
        read_glossary(path)
    assert caught.value.where == f"{path}:2"


def test_a_constraints_file_gives_each_line_its_phrases(tmp_path: Path) -> None:
    path = tmp_path / "constraints.txt"
    path.write_text("Bahnsteig\trotes Hemd\n\nHund\n", "utf-8")
    lines = read_constraints(path)
    assert [[t.target for t in line] for line in lines] == [
        ["Bahnsteig", "rotes Hemd"],
        [],
        ["Hund"],
    ]
    assert all(t.source is None for line in lines for t in line)


@pytest.mark.parametrize("line", ["a\t\tb", "\ta", "a\t", "a\t  "])
def test_an_empty_constraint_is_named(tmp_path: Path, line: str) -> None:
    path = tmp_path / "constraints.txt"
    path.write_text(f"Hund\n{line}\n", "utf-8")
    with pytest.raises(DataError, match="empty constraint") as caught:
        read_constraints(path)
    assert caught.value.where == f"{path}:2"


def test_a_source_term_that_reads_as_nothing_is_named() -> None:
    with pytest.raises(DataError, match="reads as nothing"):
        Glossary([Term(source="   ", target="x", where="g.tsv:3")], PIPELINE)
