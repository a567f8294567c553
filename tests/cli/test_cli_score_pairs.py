"""`nmtkit score-pairs`: translations score as translate reported them, n-best lists come back
re-sorted by the model's score, and bad input is one error line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nmtkit.checkpoint import load_model
from nmtkit.search.decode import build_strategy, decode_sequences
from tests.cli.runs import Invoke

NUM = 20  # validation sentences translated


@pytest.fixture(scope="module")
def source(
    val_pairs: tuple[list[str], list[str]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    path = tmp_path_factory.mktemp("pairs") / "src.en"
    path.write_text("".join(line + "\n" for line in val_pairs[0][:NUM]), encoding="utf-8")
    return path


def canonical(model_dir: Path, lines: list[str]) -> list[bool]:
    """Whether each line's best beam translation encodes back to the pieces the search chose
    (only then does scoring its text score the search's hypothesis)."""
    loaded = load_model(model_dir)
    search = loaded.config.search
    found = decode_sequences(
        loaded.model,
        [loaded.src_text.encode(line) for line in lines],
        build_strategy(search.strategy),
        batch_size=search.batch_size,
        max_len_a=search.max_len_a,
        max_len_b=search.max_len_b,
        precision="fp32",
    )
    tgt = loaded.tgt_text
    return [tgt.encode(tgt.decode(hyps[0].tokens)) == hyps[0].tokens for hyps in found]


def test_a_translation_scores_as_translate_reported_it(
    cli: Invoke, model_dir: Path, source: Path, tmp_path: Path
) -> None:
    fp32 = ("--precision", "fp32")
    translated = cli(
        ["translate", "-m", str(model_dir), "-i", str(source), "--output-format", "jsonl", *fp32]
    )
    assert translated.exit_code == 0, translated.output
    records = [json.loads(line) for line in translated.stdout.splitlines()]
    hyp = tmp_path / "hyp.de"
    hyp.write_text("".join(r["hyp"] + "\n" for r in records), encoding="utf-8")
    pairs = ["score-pairs", "-m", str(model_dir), "--source", str(source), "--target", str(hyp)]
    scored = cli([*pairs, "--output-format", "jsonl", *fp32])
    assert scored.exit_code == 0, scored.output
    results = [json.loads(line) for line in scored.stdout.splitlines()]
    assert [r["id"] for r in results] == list(range(NUM))
    same = canonical(model_dir, source.read_text(encoding="utf-8").splitlines())
    assert sum(same) >= NUM // 2
    for record, result, check in zip(records, results, same, strict=True):
        assert result["ppl"] == pytest.approx(math.exp(-result["log_prob"] / result["num_tokens"]))
        if check:
            assert result["score"] == pytest.approx(record["score"], abs=1e-4)
    tsv = cli([*pairs, *fp32])
    assert tsv.exit_code == 0, tsv.output
    rows = [line.split("\t") for line in tsv.stdout.splitlines()]
    assert [len(row) for row in rows] == [4] * NUM
    assert [float(row[1]) for row in rows] == pytest.approx([r["score"] for r in results], abs=1e-6)


def test_an_nbest_list_comes_back_resorted_by_the_model_score(
    cli: Invoke, model_dir: Path, source: Path, tmp_path: Path
) -> None:
    fp32 = ("--precision", "fp32")
    nbest = tmp_path / "nbest.txt"
    args = ["translate", "-m", str(model_dir), "-i", str(source), "--output", str(nbest)]
    translated = cli([*args, "--output-format", "nbest", "--nbest", "3", *fp32])
    assert translated.exit_code == 0, translated.output
    out = tmp_path / "rescored.txt"
    rescore = ["score-pairs", "-m", str(model_dir), "--source", str(source), "--nbest", str(nbest)]
    result = cli([*rescore, "--output", str(out), *fp32])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    before = [line.split(" ||| ") for line in nbest.read_text(encoding="utf-8").splitlines()]
    after = [line.split(" ||| ") for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(after) == len(before) == 3 * NUM
    for index in range(NUM):
        mine = [fields for fields in after if fields[0] == str(index)]
        totals = [float(fields[3]) for fields in mine]
        assert totals == sorted(totals, reverse=True)
        for fields in mine:
            assert fields[2] == f"nmt= {fields[3]}"
    # each beam's best (when its text encodes back to its pieces) keeps the score it was given
    same = canonical(model_dir, source.read_text(encoding="utf-8").splitlines())
    for index, check in enumerate(same):
        first = next(fields for fields in before if fields[0] == str(index))
        rescored = [float(f[3]) for f in after if f[0] == first[0] and f[1] == first[1]]
        if check:
            assert float(first[2]) == pytest.approx(rescored[0], abs=1e-4)


@pytest.mark.parametrize(
    ("make", "extra", "code", "message"),
    [
        (lambda d: d.write_text("ein\n"), ["--target", "{d}"], 1, "has 20 lines but"),
        (lambda d: d.write_text("a\n" * 20), ["--source", "{d}", "--target", "{d}"], 0, ""),
        (
            lambda d: d.write_text("\n" * 20),
            ["--source", "{d}", "--target", "{d}"],
            1,
            ":1: empty source",
        ),
        (lambda d: d.write_text("0 ||| a\n"), ["--nbest", "{d}"], 1, ":1: not an n-best line"),
        (lambda d: d.write_text("20 ||| a ||| 1\n"), ["--nbest", "{d}"], 1, "sentence 20, but"),
        (lambda d: d.write_text(""), [], 2, "missing option --target"),
        (
            lambda d: d.write_text(""),
            ["--target", "{d}", "--nbest", "{d}"],
            2,
            "exclude each other",
        ),
        (
            lambda d: d.write_text(""),
            ["--target", "{d}", "--output-format", "xml"],
            2,
            "unknown output format",
        ),
        (lambda d: d.write_bytes(b"\xff\n" * 20), ["--target", "{d}"], 1, ":1: invalid UTF-8"),
    ],
    ids=["counts", "ok", "empty", "nbest-line", "nbest-range", "neither", "both", "format", "utf8"],
)
def test_bad_input_is_one_error_line(
    cli: Invoke,
    model_dir: Path,
    source: Path,
    tmp_path: Path,
    make: object,
    extra: list[str],
    code: int,
    message: str,
) -> None:
    data = tmp_path / "data.txt"
    make(data)  # type: ignore[operator]
    args = [arg.format(d=data) for arg in extra]
    result = cli(["score-pairs", "-m", str(model_dir), "--source", str(source), *args])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    if code:
        assert result.stdout == ""
        assert result.stderr.startswith("nmtkit: error: ")
        assert message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_averaging_a_model_dir_without_kept_checkpoints_is_one_error_line(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    result = cli(["average", str(model_dir), "--last", "2", "-o", str(tmp_path / "avg.pt")])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"nmtkit: error: {model_dir}: keeps 0 checkpoint_<update>.pt")
    assert not (tmp_path / "avg.pt").exists()
