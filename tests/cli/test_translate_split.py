"""`nmtkit translate --split-sentences` on the tiny trained model: a line's sentences are
translated as one batch and joined in the line's layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from nmtkit.checkpoint import load_model
from nmtkit.data.text import words
from nmtkit.errors import ConfigError
from nmtkit.translation.translator import Translator
from tests.cli.runs import Invoke
from tests.cli.test_cli import assert_links_fit, out_lines, parse_links, stdin_of
from tests.cli.test_cli_errors import assert_user_error

SPLIT = "--split-sentences"


@pytest.fixture(scope="module")
def babbler(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with random weights in [-0.5, 0.5) and an fp32 search: it writes long,
    varied translations, where the trained one (20 updates) writes empty ones."""
    payload = torch.load(model_dir / "best.pt", weights_only=True)
    generator = torch.Generator().manual_seed(0)
    payload["model"] = {
        name: torch.rand(t.shape, generator=generator) - 0.5 if t.is_floating_point() else t
        for name, t in payload["model"].items()
    }
    payload["config"]["search"]["precision"] = "fp32"
    del payload["sha256"]  # an edited checkpoint no longer matches its checksum: load unchecked
    path = tmp_path_factory.mktemp("babbler") / "babbler.pt"
    torch.save(payload, path)
    return path


@pytest.fixture(scope="module")
def sentences(val_pairs: tuple[list[str], list[str]]) -> list[str]:
    """Four one-sentence validation lines, each ending in a full stop."""
    chosen = [val_pairs[0][i] for i in (1, 2, 4, 6)]
    assert all(line.endswith(".") for line in chosen)
    return chosen


def test_split_sentences_keeps_the_line_count_and_the_empty_lines(
    cli: Invoke, babbler: Path, sentences: list[str]
) -> None:
    lines = [f"{sentences[0]} {sentences[1]}", "", sentences[2], "   ", f"  {sentences[3]}"]
    result = cli(["translate", "-m", str(babbler), SPLIT], input=stdin_of(lines))
    assert result.exit_code == 0, result.output
    hyps = out_lines(result.stdout)
    assert len(hyps) == len(lines)
    assert hyps[1] == "" and hyps[3] == ""
    assert all(hyps[i].strip() for i in (0, 2, 4))
    assert hyps[4].startswith("  ")  # the line's leading whitespace is kept
    plain = cli(["translate", "-m", str(babbler)], input=stdin_of(lines))
    assert out_lines(plain.stdout)[2] == hyps[2]  # a one-sentence line translates as before


def test_a_line_of_two_sentences_gives_their_translations_joined_with_its_whitespace(
    babbler: Path, sentences: list[str]
) -> None:
    loaded = load_model(babbler)
    first, second = sentences[:2]
    line = f"  {first}\t {second} "
    split = Translator(loaded, split_sentences=True, with_alignment=True)
    assert split.splitter is not None
    assert split.splitter.split(line).sentences == (first, second)  # the premise
    alone = Translator(loaded, with_alignment=True).translate_chunk([first, second])
    assert all(t.text for t in alone)
    (joined,) = split.translate_chunk([line])
    assert joined.text == f"  {alone[0].text}\t {alone[1].text} "
    assert joined.candidates[0].score == pytest.approx(sum(t.candidates[0].score for t in alone))
    assert joined.parts is not None
    assert [p.source for p in joined.parts] == [first, second]
    assert [p.candidate for p in joined.parts] == [t.candidates[0] for t in alone]
    assert len(split.translate_chunk([first, "", second, line])) == 4


def test_jsonl_shows_each_part_and_the_whole_alignment_is_their_shifted_union(
    cli: Invoke, babbler: Path, sentences: list[str]
) -> None:
    first, second, third = sentences[:3]
    lines = [f"{first}  {second} {third}", ""]
    args = ["translate", "-m", str(babbler), "--output-format", "jsonl"]
    result = cli([*args, SPLIT], input=stdin_of(lines))
    assert result.exit_code == 0, result.output
    record, empty = (json.loads(line) for line in out_lines(result.stdout))
    assert empty["hyp"] == "" and empty["parts"] == [] and empty["alignment"] == ""
    parts = record["parts"]
    assert all(p["hyp"] and p["alignment"] for p in parts)
    assert [p["src"] for p in parts] == [first, second, third]
    assert record["hyp"] == f"{parts[0]['hyp']}  {parts[1]['hyp']} {parts[2]['hyp']}"
    assert record["score"] == pytest.approx(sum(p["score"] for p in parts), abs=1e-5)

    # Each part is what its sentence gives alone (without splitting, and without "parts").
    alone = cli(args, input=stdin_of([first, second, third]))
    singles = [json.loads(line) for line in out_lines(alone.stdout)]
    assert all("parts" not in single for single in singles)
    for part, single in zip(parts, singles, strict=True):
        assert (part["hyp"], part["score"], part["alignment"]) == (
            single["hyp"],
            single["score"],
            single["alignment"],
        )

    src_text = load_model(babbler).src_text
    expected: list[tuple[int, int]] = []
    src_offset = tgt_offset = 0
    for part in parts:
        num_src, num_tgt = len(words(src_text.pieces(part["src"]))), len(part["hyp"].split())
        assert_links_fit(part["alignment"], num_src, num_tgt)
        expected += [(i + src_offset, j + tgt_offset) for i, j in parse_links(part["alignment"])]
        src_offset, tgt_offset = src_offset + num_src, tgt_offset + num_tgt
    assert sorted(parse_links(record["alignment"])) == sorted(expected)
    assert_links_fit(record["alignment"], src_offset, len(record["hyp"].split()))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--nbest", "2", "--output-format", "nbest"], "--nbest above 1 cannot be used with"),
        (["--prefix", "PREFIX"], "--prefix cannot be used with --split-sentences"),
    ],
)
def test_split_sentences_refuses_nbest_lists_and_prefixes_with_one_line(
    cli: Invoke, model_dir: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    prefix = tmp_path / "prefix.de"
    prefix.write_text("Ein\n", "utf-8")
    extra = [str(prefix) if arg == "PREFIX" else arg for arg in extra]
    result = cli(["translate", "-m", str(model_dir), SPLIT, *extra], input="A dog.\n")
    assert_user_error(result, 2, message)
    assert result.stdout == ""


def test_the_translator_refuses_nbest_lists_and_prefixes_when_splitting(
    model_dir: Path, tmp_path: Path
) -> None:
    loaded = load_model(model_dir)
    with pytest.raises(ConfigError, match="--nbest above 1"):
        Translator(loaded, nbest=2, split_sentences=True)
    translator = Translator(loaded, split_sentences=True)
    with pytest.raises(ConfigError, match="--prefix cannot"):  # before the input is read
        next(translator.translate_stream(tmp_path / "absent.en", prefix_path=tmp_path / "p"))
    with pytest.raises(ConfigError, match="--prefix cannot"):
        translator.translate_chunk(["A dog."], prefixes=["Ein"])
