"""`--precision packed16` (and `auto` on a CPU without native bf16) of translate, score and
align, end to end on the tiny trained model: the fp32 translations, the precision in the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from nmtkit.runtime import native_bf16, packed16_available
from tests.cli.runs import Invoke
from tests.cli.test_cli import out_lines, stdin_of
from tests.cli.test_cli_errors import write_lines

pytestmark = pytest.mark.skipif(not packed16_available(), reason="no fbgemm in this torch")


def test_translate_packed16_writes_the_fp32_translations_and_logs_the_precision(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    lines = val_pairs[0][:8]
    fp32 = cli(["translate", "-m", str(model_dir), "--precision", "fp32"], input=stdin_of(lines))
    packed = cli(
        ["translate", "-m", str(model_dir), "--precision", "packed16"], input=stdin_of(lines)
    )
    assert packed.exit_code == 0, packed.output
    assert "precision=packed16" in packed.stderr
    assert out_lines(packed.stdout) == out_lines(fp32.stdout)
    auto = cli(["translate", "-m", str(model_dir), "--precision", "auto"], input=stdin_of(lines))
    assert f"precision={'bf16' if native_bf16() else 'packed16'}" in auto.stderr


def test_align_packed16_writes_links_for_every_pair(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    src = write_lines(tmp_path / "src.en", val_pairs[0][:3])
    tgt = write_lines(tmp_path / "tgt.de", val_pairs[1][:3])
    args = ["align", "-m", str(model_dir), "--source", str(src), "--target", str(tgt)]
    fp32 = cli(args)
    packed = cli([*args, "--precision", "packed16"])
    assert packed.exit_code == 0, packed.output
    assert out_lines(packed.stdout) == out_lines(fp32.stdout)
