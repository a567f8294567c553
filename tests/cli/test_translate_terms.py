"""`nmtkit translate --constraints` and `--terminology` on the tiny trained model: every
translation holds its terms, and every bad input gets one line naming its file and line."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli.runs import Invoke, translate_jsonl
from tests.cli.test_cli import out_lines, stdin_of
from tests.cli.test_cli_errors import assert_user_error


def whole_words(term: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text) is not None


def write(path: Path, lines: list[str]) -> Path:
    path.write_text(stdin_of(lines), "utf-8")
    return path


def test_every_translation_holds_its_constraints(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    lines = val_pairs[0][:4]
    constraints = write(tmp_path / "c.txt", ["Bahnsteig", "", "Feuerwehrmann\tim Regen", "Hund"])
    records = translate_jsonl(
        cli, model_dir, lines, "--constraints", str(constraints), "--nbest", "2"
    )
    wanted = [["Bahnsteig"], [], ["Feuerwehrmann", "im Regen"], ["Hund"]]
    for record, terms in zip(records, wanted, strict=True):
        if not terms:
            assert "terms" not in record
            continue
        assert [t["target"] for t in record["terms"]] == terms
        assert all(t["met"] and t["source"] is None for t in record["terms"])
        assert all(whole_words(term, record["hyp"]) for term in terms), record["hyp"]
        for candidate in record["nbest"]:  # met says what the text holds
            for use in candidate["terms"]:
                assert use["met"] == (use["target"] in candidate["hyp"]), candidate


def test_a_glossary_applies_where_its_source_term_is(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    glossary = write(tmp_path / "g.tsv", ["# en\tde", "dog\tKöter", "Red Shirt\trotes Trikot"])
    lines = ["A dog runs.", "A man in a red shirt.", "A cat sleeps.", "Hotdogs are sold."]
    records = translate_jsonl(cli, model_dir, lines, "--terminology", str(glossary))
    assert "Köter" in records[0]["hyp"]
    assert "rotes Trikot" in records[1]["hyp"]
    assert [t["source"] for t in records[1]["terms"]] == ["Red Shirt"]
    assert "terms" not in records[2] and "terms" not in records[3]  # "dogs" inside a word
    for record in records[:2]:
        assert all(t["met"] and isinstance(t["aligned"], bool) for t in record["terms"])


def test_split_sentences_give_each_sentence_its_own_terms(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    glossary = write(tmp_path / "g.tsv", ["cat\tKater"])
    constraints = write(tmp_path / "c.txt", ["Garten"])
    records = translate_jsonl(
        cli,
        model_dir,
        ["A dog runs. A cat sleeps."],
        "--split-sentences",
        "--terminology",
        str(glossary),
        "--constraints",
        str(constraints),
    )
    (record,) = records
    first, second = record["parts"]
    assert "Garten" in first["hyp"]  # a bare constraint goes to the line's first sentence
    assert "Kater" in second["hyp"]  # a glossary term to the sentence that holds its source
    assert [t["target"] for t in record["terms"]] == ["Garten", "Kater"]


def test_a_constraint_that_does_not_fit_the_beam_is_dropped_with_a_warning(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    constraints = write(tmp_path / "c.txt", ["Hund\tKatze\tMaus"])
    result = cli(
        ["translate", "-m", str(model_dir), "--beam", "3", "--constraints", str(constraints)],
        input="A dog, a cat and a mouse play.\n",
    )
    assert result.exit_code == 0, result.output
    assert "input line 1: constraints dropped" in result.stderr and "'Maus'" in result.stderr
    (hyp,) = out_lines(result.stdout)
    assert "Hund" in hyp and "Katze" in hyp


def test_bad_constraints_and_glossaries_are_named(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    base = ["translate", "-m", str(model_dir)]
    text = stdin_of(["A dog runs.", "A cat sleeps."])

    short = write(tmp_path / "short.txt", ["Hund"])
    assert_user_error(
        cli([*base, "--constraints", str(short)], input=text), 1, "short.txt", "1 lines"
    )

    empty = write(tmp_path / "empty.txt", ["Hund\t\tKatze", ""])
    assert_user_error(
        cli([*base, "--constraints", str(empty)], input=text), 1, "empty.txt:1", "empty constraint"
    )

    long = write(tmp_path / "long.txt", ["", " ".join(["Feuerwehrmann"] * 20)])
    assert_user_error(
        cli([*base, "--constraints", str(long)], input=text), 1, "long.txt:2", "more than the"
    )

    malformed = write(tmp_path / "bad.tsv", ["dog\tHund", "cat Katze"])
    assert_user_error(
        cli([*base, "--terminology", str(malformed)], input=text), 1, "bad.tsv:2", "field"
    )

    good = write(tmp_path / "good.txt", ["Hund", ""])
    greedy = cli([*base, "--greedy", "--constraints", str(good)], input=text)
    assert_user_error(greedy, 2, "beam search")

    placement = cli([*base, "--term-placement", "there"], input=text)
    assert_user_error(placement, 2, "term_placement")


def test_the_jsonl_terms_name_what_each_candidate_met(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    constraints = write(tmp_path / "c.txt", ["Hund"])
    result = cli(
        [
            "translate",
            "-m",
            str(model_dir),
            "--constraints",
            str(constraints),
            "--output-format",
            "jsonl",
        ],
        input="A dog runs.\n",
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["terms"] == [{"target": "Hund", "source": None, "met": True, "aligned": None}]
