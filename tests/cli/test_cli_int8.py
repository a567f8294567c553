"""`--precision int8` of translate and align, end to end on the tiny trained model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.runs import Invoke
from tests.cli.test_cli import out_lines, stdin_of
from tests.cli.test_cli_errors import assert_user_error, write_lines


@pytest.fixture(scope="module")
def torchao() -> object:
    return pytest.importorskip("torchao")


@pytest.mark.parametrize("command", ["translate", "align"])
def test_precision_help_offers_int8_and_packed16(cli: Invoke, command: str) -> None:
    result = cli([command, "--help"])
    assert result.exit_code == 0
    assert "int8" in result.stdout and "torchao" in result.stdout
    assert "packed16" in result.stdout and "fbgemm" in result.stdout


def test_translate_int8_writes_one_line_per_input_and_logs_the_precision(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]], torchao: object
) -> None:
    lines = val_pairs[0][:4]
    result = cli(["translate", "-m", str(model_dir), "--precision", "int8"], input=stdin_of(lines))
    assert result.exit_code == 0, result.output
    assert len(out_lines(result.stdout)) == len(lines)
    assert "precision=int8" in result.stderr


def test_align_int8_writes_links_for_every_pair(
    cli: Invoke,
    model_dir: Path,
    val_pairs: tuple[list[str], list[str]],
    tmp_path: Path,
    torchao: object,
) -> None:
    src = write_lines(tmp_path / "src.en", val_pairs[0][:3])
    tgt = write_lines(tmp_path / "tgt.de", val_pairs[1][:3])
    args = ["align", "-m", str(model_dir), "--source", str(src), "--target", str(tgt)]
    result = cli([*args, "--precision", "int8"])
    assert result.exit_code == 0, result.output
    rows = out_lines(result.stdout)
    assert len(rows) == 3
    assert all(link.count("-") == 1 for row in rows for link in row.split())


@pytest.mark.parametrize("command", ["translate", "align"])
def test_an_unknown_precision_is_one_line_listing_int8(
    cli: Invoke, model_dir: Path, tmp_path: Path, command: str
) -> None:
    src = write_lines(tmp_path / "src.en", ["a dog ."])
    args = {
        "translate": ["translate", "-m", str(model_dir), "--precision", "int4"],
        "align": [
            *("align", "-m", str(model_dir), "--source", str(src), "--target", str(src)),
            *("--precision", "int4"),
        ],
    }[command]
    assert_user_error(cli(args, input="a dog .\n"), 2, "unknown precision 'int4'", "int8")
