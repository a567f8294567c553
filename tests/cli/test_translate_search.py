"""`nmtkit translate` with target prefixes, sampling and workers, on the tiny trained model."""

from __future__ import annotations

from pathlib import Path

from nmtkit.checkpoint import load_model
from tests.cli.runs import Invoke
from tests.cli.test_cli import out_lines, stdin_of
from tests.cli.test_cli_errors import assert_usage_error, assert_user_error


def test_translate_starts_each_line_with_its_prefix(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    lines = val_pairs[0][:3]
    prefixes = ["Ein Hund", "", "Zwei Männer"]
    prefix_file = tmp_path / "prefix.de"
    prefix_file.write_text(stdin_of(prefixes), "utf-8")
    base = ["translate", "-m", str(model_dir)]
    forced = cli([*base, "--prefix", str(prefix_file)], input=stdin_of(lines))
    plain = cli(base, input=stdin_of(lines))
    assert forced.exit_code == plain.exit_code == 0, forced.output
    tgt_text = load_model(model_dir).tgt_text
    hyps, free_hyps = out_lines(forced.stdout), out_lines(plain.stdout)
    for prefix, hyp, free in zip(prefixes, hyps, free_hyps, strict=True):
        if prefix:
            assert hyp.startswith(tgt_text.decode(tgt_text.encode(prefix))), (prefix, hyp)
        else:
            assert hyp == free

    prefix_file.write_text(stdin_of(prefixes[:2]), "utf-8")
    short = cli([*base, "--prefix", str(prefix_file)], input=stdin_of(lines))
    assert_user_error(short, 1, "prefix.de", "2 lines", "has 3")
    assert short.stdout == ""


def test_translate_sampling_is_seeded_and_gives_ranked_samples(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    text = stdin_of(val_pairs[0][:2])
    args = ["translate", "-m", str(model_dir), "--sampling", "--top-k", "20", "--seed", "3"]
    nbest = [*args, "--nbest", "3", "--output-format", "nbest"]
    first, again = cli(nbest, input=text), cli(nbest, input=text)
    assert first.exit_code == again.exit_code == 0, first.output
    assert first.stdout == again.stdout
    rows = [line.split(" ||| ") for line in out_lines(first.stdout)]
    assert [int(row[0]) for row in rows] == [0, 0, 0, 1, 1, 1]
    for sentence in (rows[:3], rows[3:]):
        scores = [float(row[2]) for row in sentence]
        assert scores == sorted(scores, reverse=True)

    assert_user_error(cli([*args, "--beam", "4"], input=text), 2, "--sampling")


def test_a_beam_of_one_with_beam_options_runs_beam_search_and_logs_the_precision(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    text = stdin_of(val_pairs[0][:2])
    base = ["translate", "-m", str(model_dir), "--precision", "fp32"]
    beam = cli([*base, "--beam", "1", "--length-penalty", "0"], input=text)
    greedy = cli([*base, "--beam", "1"], input=text)
    assert beam.exit_code == greedy.exit_code == 0, beam.output
    logged = " ".join(beam.stderr.split())
    assert "search: beam (beam_size=1, length_penalty=0.0," in logged
    assert logged.count("precision=fp32") == 1
    assert "search: greedy precision=fp32" in " ".join(greedy.stderr.split())
    assert beam.stdout == greedy.stdout  # a beam of 1 finds greedy's words

    both = cli([*base, "--greedy", "--length-penalty", "0"], input=text)
    assert_user_error(both, 2, "--greedy cannot be combined")


def test_two_workers_translate_as_one_and_zero_workers_is_refused(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    text = stdin_of(val_pairs[0][:40])
    base = ["translate", "-m", str(model_dir), "--batch-size", "4", "--threads", "1"]
    one = cli([*base, "--workers", "1"], input=text)
    two = cli([*base, "--workers", "2"], input=text)
    assert one.exit_code == two.exit_code == 0, two.output
    assert two.stdout == one.stdout and len(out_lines(one.stdout)) == 40
    assert_usage_error(cli([*base, "--workers", "0"], input=text), "--workers")
