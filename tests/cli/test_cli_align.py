"""`nmtkit align` methods and scores: --method, --reverse-model, --gold, --evaluate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runs import NUM_UPDATES, Invoke, Run, invoke
from tests.cli.test_cli_errors import assert_user_error, write_lines

Links = set[tuple[int, int]]

# Two sentence pairs: |A| = 5, |S| = 3, |A & S| = 2, |A & P| = 3 (P 60, R 66.67, AER 37.5).
PREDICTED = ["0-0 1-2 2-1", "0-0 1-1"]
GOLD = ["0-0 1-1 1p2 2p2", "0-0"]
HAND_LINE = "60.00\t66.67\t37.50"
BIDIRECTIONAL = ["intersection", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and"]


def links_of(line: str) -> Links:
    return {(int(i), int(j)) for i, j in (token.split("-") for token in line.split())}


def lines_of(text: str) -> list[str]:
    return text.splitlines()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("align-scores")


@pytest.fixture(scope="module")
def pairs(val_pairs: tuple[list[str], list[str]], folder: Path) -> tuple[Path, Path]:
    """Four validation pairs, en and de."""
    return (
        write_lines(folder / "src.en", val_pairs[0][:4]),
        write_lines(folder / "tgt.de", val_pairs[1][:4]),
    )


@pytest.fixture(scope="module")
def reverse_model(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny de->en model, trained like the session's en->de one."""
    folder = tmp_path_factory.mktemp("reverse")
    prep = invoke(
        [
            *("preprocess", "-s", "de", "-t", "en", "--vocab-size", "300", "-q"),
            *("--trainpref", str(corpus_dir / "train"), "--validpref", str(corpus_dir / "valid")),
            *("--destdir", str(folder / "data")),
        ]
    )
    assert prep.exit_code == 0, prep.output
    train = invoke(
        [
            *("train", str(folder / "data"), "-o", str(folder / "model"), "--preset", "tiny"),
            *("--max-updates", str(NUM_UPDATES), "--set", f"train.validate_every={NUM_UPDATES}"),
            *("--threads", "1", "-q"),
        ]
    )
    assert train.exit_code == 0, train.output
    return folder / "model"


def align_args(model_dir: Path, pairs: tuple[Path, Path], *extra: str) -> list[str]:
    src, tgt = (str(path) for path in pairs)
    return ["align", "-m", str(model_dir), "--source", src, "--target", tgt, *extra]


def test_align_help_lists_the_method_and_scoring_options(cli: Invoke) -> None:
    result = cli(["align", "--help"])
    assert result.exit_code == 0, result.output
    for option in ("--method", "--threshold", "--reverse-model", "--gold", "--gold-one-indexed"):
        assert option in result.stdout
    for option in ("--reverse", "--evaluate", "--json"):
        assert option in result.stdout


# ------------------------------------------------------------------------------ --evaluate


def test_evaluate_scores_a_file_without_a_model(cli: Invoke, tmp_path: Path) -> None:
    predicted = write_lines(tmp_path / "pred.align", PREDICTED)
    gold = write_lines(tmp_path / "gold.align", GOLD)
    result = cli(["align", "--evaluate", str(predicted), "--gold", str(gold)])
    assert result.exit_code == 0, result.output
    assert result.stdout == HAND_LINE + "\n"
    assert "AER" in result.stderr and "37.5" in result.stderr


def test_evaluate_json_gives_fractions_and_counts(cli: Invoke, tmp_path: Path) -> None:
    predicted = write_lines(tmp_path / "pred.align", PREDICTED)
    gold = write_lines(tmp_path / "gold.align", GOLD)
    result = cli(["align", "--evaluate", str(predicted), "--gold", str(gold), "--json", "-q"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["aer"] == pytest.approx(0.375)
    assert (record["num_sentences"], record["num_predicted"], record["num_sure"]) == (2, 5, 3)
    assert result.stderr == ""


def test_evaluate_reads_one_indexed_target_source_gold(cli: Invoke, tmp_path: Path) -> None:
    predicted = write_lines(tmp_path / "pred.align", PREDICTED)
    gold = write_lines(tmp_path / "gold.align", ["1-1 2-2 3p2 3p3", "1-1"])
    args = ["align", "--evaluate", str(predicted), "--gold", str(gold)]
    result = cli([*args, "--gold-one-indexed", "--reverse", "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout == HAND_LINE + "\n"


def test_hansards_sure_links_score_perfectly(
    cli: Invoke, shared_data: Path, tmp_path: Path
) -> None:
    gold = shared_data / "alignment" / "enfr.gold"
    sure = [
        " ".join(
            f"{int(i) - 1}-{int(j) - 1}"
            for i, j in (t.split("-") for t in line.split() if "-" in t)
        )
        for line in gold.read_text("utf-8").splitlines()
    ]
    predicted = write_lines(tmp_path / "sure.align", sure)
    args = ["align", "--evaluate", str(predicted), "--gold", str(gold), "--gold-one-indexed"]
    result = cli([*args, "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "100.00\t100.00\t0.00\n"


# ------------------------------------------------------------------------------ --gold with a model


def test_align_with_gold_prints_scores_and_writes_links_only_to_output(
    cli: Invoke, model_dir: Path, pairs: tuple[Path, Path], tmp_path: Path
) -> None:
    gold = write_lines(tmp_path / "gold.align", ["0-0 1p1", "0-0", "0-0 1-1", "0p0"])
    out = tmp_path / "out.align"
    result = cli(align_args(model_dir, pairs, "--gold", str(gold), "--output", str(out)))
    assert result.exit_code == 0, result.output
    assert len(lines_of(result.stdout)) == 1
    assert len(result.stdout.split("\t")) == 3
    assert len(lines_of(out.read_text("utf-8"))) == 4
    again = cli(["align", "--evaluate", str(out), "--gold", str(gold), "-q"])
    assert again.exit_code == 0, again.output
    assert again.stdout == result.stdout

    without_output = cli(align_args(model_dir, pairs, "--gold", str(gold), "-q"))
    assert without_output.stdout == result.stdout


def test_threshold_links_include_the_argmax_links_for_a_small_threshold(
    cli: Invoke, model_dir: Path, pairs: tuple[Path, Path]
) -> None:
    argmax = cli(align_args(model_dir, pairs))
    threshold = cli(align_args(model_dir, pairs, "--method", "threshold", "--threshold", "0.01"))
    assert argmax.exit_code == 0 and threshold.exit_code == 0, threshold.output
    for one, many in zip(lines_of(argmax.stdout), lines_of(threshold.stdout), strict=True):
        assert links_of(one) <= links_of(many)


def test_bidirectional_methods_combine_both_models_argmax_links(
    cli: Invoke, model_dir: Path, reverse_model: Path, pairs: tuple[Path, Path]
) -> None:
    forward = cli(align_args(model_dir, pairs))
    backward = cli(align_args(reverse_model, (pairs[1], pairs[0])))
    assert forward.exit_code == 0 and backward.exit_code == 0, backward.output
    one_way = [links_of(line) for line in lines_of(forward.stdout)]
    other_way = [{(i, j) for j, i in links_of(line)} for line in lines_of(backward.stdout)]
    found = {}
    for method in BIDIRECTIONAL:
        args = align_args(
            model_dir, pairs, "--method", method, "--reverse-model", str(reverse_model)
        )
        result = cli(args)
        assert result.exit_code == 0, result.output
        found[method] = [links_of(line) for line in lines_of(result.stdout)]
        assert len(found[method]) == 4
    for k, (fwd, bwd) in enumerate(zip(one_way, other_way, strict=True)):
        assert found["intersection"][k] == fwd & bwd
        assert found["union"][k] == fwd | bwd
        assert fwd & bwd <= found["grow-diag-final"][k] <= fwd | bwd


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--method", "grow-diag-final"], ["--method grow-diag-final", "--reverse-model"]),
        (["--method", "argmx"], ["unknown alignment method 'argmx'", "did you mean 'argmax'"]),
        (["--threshold", "0"], ["--threshold must be in (0, 1]"]),
    ],
    ids=["no-reverse-model", "unknown-method", "threshold"],
)
def test_align_rejects_bad_methods_with_exit_2(
    cli: Invoke, model_dir: Path, pairs: tuple[Path, Path], extra: list[str], fragments: list[str]
) -> None:
    result = cli(align_args(model_dir, pairs, *extra))
    assert_user_error(result, 2, *fragments)
    assert result.stdout == ""


def test_a_reverse_model_needs_a_bidirectional_method(
    cli: Invoke, model_dir: Path, pairs: tuple[Path, Path]
) -> None:
    result = cli(align_args(model_dir, pairs, "--reverse-model", str(model_dir)))
    assert_user_error(result, 2, "--reverse-model is not used by --method argmax")


def test_a_reverse_model_must_translate_the_other_way(
    cli: Invoke, model_dir: Path, pairs: tuple[Path, Path]
) -> None:
    args = align_args(model_dir, pairs, "--method", "union", "--reverse-model", str(model_dir))
    result = cli(args)
    assert_user_error(result, 2, "translates en->de, expected de->en")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["align", "--evaluate", "pred.align"], "--evaluate needs --gold"),
        (["align", "--source", "a", "--target", "b"], "missing option --model"),
        (["align", "-m", "model", "--target", "b"], "missing option --source"),
    ],
)
def test_align_without_what_it_needs_is_a_usage_error(
    cli: Invoke, args: list[str], fragment: str
) -> None:
    assert_user_error(cli(args), 2, fragment)


def test_evaluate_names_both_files_when_line_counts_differ(cli: Invoke, tmp_path: Path) -> None:
    predicted = write_lines(tmp_path / "pred.align", PREDICTED)
    gold = write_lines(tmp_path / "gold.align", [*GOLD, "0-0"])
    result = cli(["align", "--evaluate", str(predicted), "--gold", str(gold)])
    assert_user_error(result, 1, "2 alignments in", "pred.align", "but 3 in", "gold.align")
    assert result.stdout == ""


@pytest.mark.parametrize("bad", ["pred.align", "gold.align"])
def test_evaluate_names_file_and_line_of_a_bad_link(cli: Invoke, tmp_path: Path, bad: str) -> None:
    paths = {
        name: write_lines(tmp_path / name, ["0-0", "1-1"]) for name in ("pred.align", "gold.align")
    }
    write_lines(paths[bad], ["0-0", "1-1 3-x"])
    result = cli(
        ["align", "--evaluate", str(paths["pred.align"]), "--gold", str(paths["gold.align"])]
    )
    assert_user_error(result, 1, f"{bad}:2: malformed alignment link '3-x'")
    assert result.stdout == ""


def test_align_with_gold_names_source_and_gold_when_line_counts_differ(
    cli: Invoke, model_dir: Path, pairs: tuple[Path, Path], tmp_path: Path
) -> None:
    gold = write_lines(tmp_path / "gold.align", ["0-0"] * 3)
    out = tmp_path / "out.align"
    result = cli(align_args(model_dir, pairs, "--gold", str(gold), "--output", str(out)))
    assert_user_error(result, 1, "src.en has 4 lines", "gold.align has 3")
    assert not out.exists()


@pytest.fixture(scope="module")
def fixed_context_model(preprocessed: Run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RNNencdec-style model (attention 'none'), trained for one update."""
    model_dir = tmp_path_factory.mktemp("fixed") / "model"
    result = invoke(
        [
            *("train", str(preprocessed.path), "-o", str(model_dir), "--preset", "tiny"),
            *("--set", "model.attention=none", "--set", "train.validate_every=1"),
            *("--max-updates", "1", "--threads", "1", "-q"),
        ]
    )
    assert result.exit_code == 0, result.output
    return model_dir


def test_a_model_without_attention_cannot_align(
    cli: Invoke, fixed_context_model: Path, pairs: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.align"
    result = cli(align_args(fixed_context_model, pairs, "--output", str(out)))
    assert_user_error(
        result, 2, f"model {fixed_context_model}", "attention 'none'", "not an alignment"
    )
    assert result.stdout == "" and not out.exists()


def test_jsonl_translations_of_a_model_without_attention_carry_no_alignment(
    cli: Invoke, fixed_context_model: Path
) -> None:
    result = cli(
        ["translate", "-m", str(fixed_context_model), "--output-format", "jsonl", "--greedy"],
        input="a b c\n",
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["alignment"] is None
    assert all(item["alignment"] is None for item in record["nbest"])
    assert "not an alignment" in " ".join(result.stderr.split())
