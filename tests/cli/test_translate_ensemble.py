"""`nmtkit translate -m A -m B` and `nmtkit align -m A -m B`: ensembles of the tiny trained model
with a second one trained on the same data dir; a model of another vocabulary is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nmtkit.search.overrides import SearchOverrides
from nmtkit.translation.loading import open_translator
from tests.cli.runs import NUM_UPDATES, Invoke, Run, invoke
from tests.cli.test_cli import PHARAOH_LINK, out_lines, stdin_of
from tests.cli.test_cli_errors import assert_user_error, write_lines


def train_args(data_dir: Path, model_dir: Path, *, updates: int, seed: int) -> list[str]:
    return [
        *("train", str(data_dir), "-o", str(model_dir), "--preset", "tiny"),
        *("--max-updates", str(updates), "--set", f"train.validate_every={updates}"),
        *("--seed", str(seed), "--threads", "1", "-q"),
    ]


@pytest.fixture(scope="module")
def second_model(preprocessed: Run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second en->de model of the session model's vocabulary: same data dir, other seed."""
    model_dir = tmp_path_factory.mktemp("second") / "model"
    result = invoke(train_args(preprocessed.path, model_dir, updates=NUM_UPDATES, seed=2))
    assert result.exit_code == 0, result.output
    return model_dir


@pytest.fixture(scope="module")
def other_vocab_model(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An en->de model of another vocabulary (250 pieces), trained 2 updates."""
    folder = tmp_path_factory.mktemp("other-vocab")
    prep = invoke(
        [
            *("preprocess", "-s", "en", "-t", "de", "--vocab-size", "250", "-q"),
            *("--trainpref", str(corpus_dir / "train"), "--validpref", str(corpus_dir / "valid")),
            *("--destdir", str(folder / "data")),
        ]
    )
    assert prep.exit_code == 0, prep.output
    result = invoke(train_args(folder / "data", folder / "model", updates=2, seed=1))
    assert result.exit_code == 0, result.output
    return folder / "model"


@pytest.fixture(scope="module")
def lines(val_pairs: tuple[list[str], list[str]]) -> list[str]:
    return val_pairs[0][:6]


def translate(cli: Invoke, models: list[Path], lines: list[str], *extra: str):
    args = ["translate", *(arg for model in models for arg in ("-m", str(model))), *extra]
    return cli([*args, "--threads", "1"], input=stdin_of(lines))


def nbest_rows(stdout: str) -> list[tuple[int, str, float]]:
    """(index, hypothesis, score) of each ``i ||| hypothesis ||| score`` line."""
    rows = [line.split(" ||| ") for line in out_lines(stdout)]
    return [(int(index), text, float(score)) for index, text, score in rows]


def test_translate_with_two_models_gives_the_library_ensembles_n_best_lists(
    cli: Invoke, model_dir: Path, second_model: Path, lines: list[str]
) -> None:
    nbest = ["--beam", "3", "--nbest", "3", "--output-format", "nbest"]
    result = translate(cli, [model_dir, second_model], lines, *nbest)
    assert result.exit_code == 0, result.output
    assert "ensemble of 2 models" in result.stderr
    translator = open_translator([model_dir, second_model], search=SearchOverrides(beam=3), nbest=3)
    expected = [
        (item.index, candidate.text, candidate.score)
        for item in translator.translate(lines)
        for candidate in item.candidates
    ]
    found = nbest_rows(result.stdout)
    assert [row[:2] for row in found] == [row[:2] for row in expected]
    assert [row[2] for row in found] == pytest.approx([row[2] for row in expected], abs=1e-4)
    alone = nbest_rows(translate(cli, [model_dir], lines, *nbest).stdout)
    assert [row[2] for row in alone] != pytest.approx([row[2] for row in found], abs=1e-3)


def test_an_ensemble_of_the_model_with_itself_translates_as_the_model(
    cli: Invoke, model_dir: Path, lines: list[str]
) -> None:
    alone = translate(cli, [model_dir], lines)
    twice = translate(cli, [model_dir, model_dir / "best.pt"], lines)
    assert alone.exit_code == twice.exit_code == 0, twice.output
    assert twice.stdout == alone.stdout


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(["--greedy", "--output-format", "jsonl"], id="greedy-jsonl"),
        pytest.param(["--sampling", "--nbest", "2", "--output-format", "nbest"], id="sampling"),
        pytest.param(["--precision", "int8"], id="int8"),
        pytest.param(["--split-sentences"], id="split"),
    ],
)
def test_an_ensemble_translates_with_every_strategy_and_option(
    cli: Invoke, model_dir: Path, second_model: Path, lines: list[str], extra: list[str]
) -> None:
    result = translate(cli, [model_dir, second_model], lines, *extra)
    assert result.exit_code == 0, result.output
    rows = out_lines(result.stdout)
    assert len(rows) == len(lines) * (2 if "--nbest" in extra else 1)


def test_an_ensemble_uses_the_first_models_shortlist(
    cli: Invoke,
    preprocessed: Run,
    model_dir: Path,
    second_model: Path,
    lines: list[str],
    tmp_path: Path,
) -> None:
    first = tmp_path / "first"
    first.mkdir()
    shutil.copy(model_dir / "best.pt", first / "best.pt")
    built = cli(["shortlist", str(preprocessed.path), "-m", str(first), "--top-k", "20", "-q"])
    assert built.exit_code == 0, built.output
    result = translate(cli, [first, second_model], lines, "--shortlist")
    assert result.exit_code == 0, result.output
    assert len(out_lines(result.stdout)) == len(lines)


def test_models_of_different_vocabularies_are_refused_naming_both(
    cli: Invoke, model_dir: Path, other_vocab_model: Path, lines: list[str], tmp_path: Path
) -> None:
    result = translate(cli, [model_dir, other_vocab_model], lines)
    assert_user_error(result, 2, str(model_dir), str(other_vocab_model), "different vocabularies")
    assert result.stdout == ""
    src = write_lines(tmp_path / "src.en", lines[:2])
    aligned = cli(
        [
            *("align", "-m", str(model_dir), "-m", str(other_vocab_model)),
            *("--source", str(src), "--target", str(src)),
        ]
    )
    assert_user_error(aligned, 2, str(model_dir), str(other_vocab_model), "different vocabularies")


def test_align_with_two_models_writes_one_line_of_links_per_pair(
    cli: Invoke,
    model_dir: Path,
    second_model: Path,
    val_pairs: tuple[list[str], list[str]],
    tmp_path: Path,
) -> None:
    src = write_lines(tmp_path / "src.en", val_pairs[0][:4])
    tgt = write_lines(tmp_path / "tgt.de", val_pairs[1][:4])
    base = ["align", "--source", str(src), "--target", str(tgt)]
    both = cli([*base, "-m", str(model_dir), "-m", str(second_model)])
    assert both.exit_code == 0, both.output
    rows = out_lines(both.stdout)
    assert len(rows) == 4
    assert all(PHARAOH_LINK.fullmatch(link) for row in rows for link in row.split())
    alone = cli([*base, "-m", str(model_dir)])
    twice = cli([*base, "-m", str(model_dir), "-m", str(model_dir)])
    assert alone.exit_code == twice.exit_code == 0, twice.output
    assert twice.stdout == alone.stdout
