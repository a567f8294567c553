"""Term accuracy: exact match of 13a words, case-sensitive, consecutive, each listed term once."""

from __future__ import annotations

import pytest

from nmtkit.errors import DataError
from nmtkit.scoring.terms import TermAccuracy, TermMiss, count_occurrences, term_accuracy


@pytest.mark.parametrize(
    ("hyp", "term", "matched"),
    [
        pytest.param("He works for the European Central Bank.", "Central Bank", 1, id="multi-word"),
        pytest.param("He works for the Central European Bank.", "Central Bank", 0, id="split"),
        pytest.param("She paid the bank.", "Bank", 0, id="case-mismatch"),
        pytest.param("Two cats sleep.", "cat", 0, id="inside-a-longer-word"),
        pytest.param("A bobcat sleeps.", "cat", 0, id="end-of-a-longer-word"),
        pytest.param("They went to Paris, then home.", "Paris", 1, id="comma-after"),
        pytest.param("(Paris) is big.", "Paris", 1, id="brackets-around"),
        pytest.param('Read the "Terms".', "Terms", 1, id="quotes-around"),
        pytest.param("Send an e-mail.", "e-mail", 1, id="hyphen-kept-by-13a"),
        pytest.param("Send an e-mail.", "mail", 0, id="part-of-a-hyphenated-word"),
        pytest.param("Use the U.S. dollar.", "U.S.", 1, id="term-tokenized-alike"),
        pytest.param("It costs 3.5 euros.", "3.5 euros", 1, id="number"),
    ],
)
def test_a_term_matches_only_as_consecutive_13a_words_of_the_same_case(
    hyp: str, term: str, matched: int
) -> None:
    assert term_accuracy([hyp], [[term]]) == TermAccuracy(
        matched=matched,
        total=1,
        misses=() if matched else (TermMiss(line=1, term=term),),
    )


def test_a_term_listed_twice_needs_two_occurrences() -> None:
    once = term_accuracy(["The cat saw a dog."], [["cat", "cat"]])
    assert (once.matched, once.total) == (1, 2)
    assert once.misses == (TermMiss(line=1, term="cat"),)
    twice = term_accuracy(["The cat saw a cat."], [["cat", "cat"]])
    assert (twice.matched, twice.total, twice.misses) == (2, 2, ())


def test_a_term_found_twice_but_listed_once_counts_once() -> None:
    accuracy = term_accuracy(["cat cat cat"], [["cat"]])
    assert (accuracy.matched, accuracy.total) == (1, 1)


def test_occurrences_do_not_overlap() -> None:
    assert count_occurrences(["a", "a", "a"], ("a", "a")) == 1
    assert count_occurrences(["a"] * 4, ("a", "a")) == 2
    accuracy = term_accuracy(["la la la"], [["la la", "la la"]])
    assert (accuracy.matched, accuracy.total) == (1, 2)


def test_different_terms_are_counted_independently() -> None:
    accuracy = term_accuracy(["I love New York."], [["New York", "York"]])
    assert (accuracy.matched, accuracy.total) == (2, 2)


def test_empty_lines_and_empty_hypotheses() -> None:
    hyps = ["The cat sleeps.", "", "Nothing required here.", ""]
    accuracy = term_accuracy(hyps, [["cat"], [], [], ["dog"]])
    assert (accuracy.matched, accuracy.total) == (1, 2)
    assert accuracy.misses == (TermMiss(line=4, term="dog"),)
    assert accuracy.score == pytest.approx(50.0)
    assert accuracy.text == "50.00 (1/2)"


def test_no_required_term_has_no_score() -> None:
    accuracy = term_accuracy(["a", "b"], [[], []])
    assert (accuracy.matched, accuracy.total, accuracy.score) == (0, 0, None)
    assert accuracy.text == "n/a (0/0)"
    assert accuracy.to_dict() == {"score": None, "matched": 0, "total": 0, "misses": []}


def test_score_is_a_percentage_with_thousands_separators_in_its_text() -> None:
    accuracy = TermAccuracy(matched=1234, total=1250)
    assert accuracy.score == pytest.approx(98.72)
    assert accuracy.text == "98.72 (1,234/1,250)"
    assert accuracy.signature.startswith("nterms:1250|tok:13a|case:mixed")


def test_misses_name_line_and_term_in_order() -> None:
    hyps = ["Der Hund bellt.", "Die Katze schläft."]
    accuracy = term_accuracy(hyps, [["Katze", "Hund"], ["Hund", "Vogel"]])
    assert accuracy.misses == (
        TermMiss(line=1, term="Katze"),
        TermMiss(line=2, term="Hund"),
        TermMiss(line=2, term="Vogel"),
    )
    assert accuracy.to_dict()["misses"][0] == {"line": 1, "term": "Katze"}


def test_a_line_count_mismatch_is_a_data_error_naming_the_terms() -> None:
    with pytest.raises(DataError, match=r"terms.tsv has 1 lines but there are 2 hypotheses"):
        term_accuracy(["a", "b"], [["a"]], name="terms.tsv")


def test_a_term_without_words_is_a_data_error_naming_file_and_line() -> None:
    with pytest.raises(DataError) as info:
        term_accuracy(["a", "b"], [[], ["<skipped>"]], name="terms.tsv")
    assert info.value.where == "terms.tsv:2"


def test_a_line_given_as_a_string_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        term_accuracy(["a cat"], ["cat"])
