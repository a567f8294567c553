"""Every command end to end on a tiny real Multi30k slice: exit codes, files, clean stdout."""

from __future__ import annotations

import gzip
import json
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

import nmtkit
from tests.cli.runs import NUM_TRAIN, NUM_UPDATES, NUM_VALID, Invoke, Run
from tests.processes import run, spawn

PHARAOH_LINK = re.compile(r"([0-9]+)-([0-9]+)")
BIN_DIR = Path(sys.executable).parent


def stdin_of(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def out_lines(stdout: str) -> list[str]:
    """The lines of stdout, which must end with a newline (or be empty)."""
    assert stdout == "" or stdout.endswith("\n"), repr(stdout[-80:])
    return stdout.split("\n")[:-1]


def flat(text: str) -> str:
    """Text with rich's box characters dropped and whitespace collapsed, for phrase checks."""
    return " ".join(re.sub(r"[│╭╮╰╯─┃━┏┓┗┛┡┩└┘┳┻╇]", " ", text).split())


def parse_links(line: str) -> list[tuple[int, int]]:
    links = []
    for token in line.split():
        match = PHARAOH_LINK.fullmatch(token)
        assert match, f"not a Pharaoh link: {token!r} in {line!r}"
        links.append((int(match[1]), int(match[2])))
    return links


def assert_links_fit(line: str, num_src_words: int, num_tgt_words: int) -> None:
    """Links are in range and, as argmax links, give each target word exactly one source word."""
    links = parse_links(line)
    assert all(i < num_src_words for i, _ in links), (line, num_src_words)
    assert sorted(j for _, j in links) == list(range(num_tgt_words)), (line, num_tgt_words)


# ------------------------------------------------------------------------------ app-wide


def test_version_prints_the_package_version(cli: Invoke) -> None:
    result = cli(["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"nmtkit {nmtkit.__version__}\n"


HELP_OPTIONS = {
    "preprocess": [
        "--source-lang",
        "--target-lang",
        "--trainpref",
        "--validpref",
        "--testpref",
        "--destdir",
        "--vocab-size",
        "--max-len",
        "--skip-invalid",
        "--workers",
    ],
    "train": [
        "--save-dir",
        "--config",
        "--preset",
        "--set",
        "--max-updates",
        "--resume",
        "--overwrite",
        "--tensorboard",
        "--print-config",
    ],
    "translate": [
        "--model",
        "--input",
        "--output",
        "--beam",
        "--greedy",
        "--batch-size",
        "--max-len-a",
        "--max-len-b",
        "--nbest",
        "--output-format",
        "--device",
        "--threads",
    ],
    "score": [
        *("--ref", "--input", "--metric", "--lowercase", "--tokenize", "--json", "--name"),
        *("--paired-bs", "--paired-ar", "--paired-bs-n", "--paired-ar-n", "--seed"),
        *("--by-length", "--source", "--bucket-by", "--buckets", "--plot"),
    ],
    "score-pairs": [
        *("--model", "--source", "--target", "--nbest", "--feature", "--output"),
        *("--output-format", "--length-penalty", "--greedy"),
        *("--batch-size", "--max-tokens", "--precision"),
    ],
    "average": ["--output", "--last", "--overwrite"],
    "align": [
        "--model",
        "--source",
        "--target",
        "--output",
        "--soft",
        "--plot",
        "--plot-format",
        "--limit",
    ],
    "download": ["--cache-dir"],
}


@pytest.mark.parametrize("command", sorted(HELP_OPTIONS))
def test_help_of_every_command_exits_0_and_lists_its_options(cli: Invoke, command: str) -> None:
    result = cli([command, "--help"])
    assert result.exit_code == 0, result.output
    for option in HELP_OPTIONS[command]:
        assert option in result.stdout
    assert "Traceback" not in result.output


def test_top_level_help_lists_every_command(cli: Invoke) -> None:
    result = cli(["--help"])
    assert result.exit_code == 0
    for command in HELP_OPTIONS:
        assert command in result.stdout


def test_help_keeps_defaults_written_in_square_brackets(cli: Invoke) -> None:
    # Typer reads help text as rich markup, where '[default: ...]' is a tag and vanishes.
    result = cli(["translate", "--help"])
    text = flat(result.stdout)
    assert "[default: the model's, 5]" in text
    assert "[default: 1000]" in text and "[default: 10.0]" in text


# ------------------------------------------------------------------------------ preprocess


def test_preprocess_writes_a_data_dir_with_its_manifest(preprocessed: Run) -> None:
    manifest = json.loads((preprocessed.path / "manifest.json").read_text("utf-8"))
    assert manifest["format"] == "nmtkit-data"
    assert (manifest["src_lang"], manifest["tgt_lang"]) == ("en", "de")
    assert manifest["splits"]["train"]["num_sentences"] == NUM_TRAIN
    assert manifest["splits"]["valid"]["num_sentences"] == NUM_VALID
    for name in ("spm.model", "train.en.bin", "train.de.idx", "valid.de.bin", "valid.raw.de"):
        assert (preprocessed.path / name).is_file(), name
    assert not list(preprocessed.path.parent.glob("data.*")), "a staging folder was left"


def test_preprocess_prints_its_summary_on_stderr_only(preprocessed: Run) -> None:
    result = preprocessed.result
    assert result.stdout == ""
    summary = flat(result.stderr)
    assert f"train {NUM_TRAIN} {NUM_TRAIN}" in summary
    assert f"valid {NUM_VALID} {NUM_VALID}" in summary


# ------------------------------------------------------------------------------ train


def test_train_writes_checkpoints_config_metrics_and_log(trained: Run) -> None:
    files = ("best.pt", "last.pt", "train_state.pt", "config.yaml", "metrics.jsonl", "train.log")
    for name in files:
        assert (trained.path / name).is_file(), name
    config = yaml.safe_load((trained.path / "config.yaml").read_text("utf-8"))
    assert config["train"]["max_updates"] == NUM_UPDATES
    assert config["model"]["encoder"]["hidden_size"] == 32  # the tiny preset
    metrics = (trained.path / "metrics.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in metrics]
    assert any(r["kind"] == "valid" and r["step"] == NUM_UPDATES for r in records)
    assert f"step={NUM_UPDATES}" in (trained.path / "train.log").read_text("utf-8")
    assert not list(trained.path.glob("*.tmp"))


def test_train_reports_on_stderr_and_leaves_stdout_empty(trained: Run) -> None:
    assert trained.result.stdout == ""
    assert f"trained {NUM_UPDATES} updates" in flat(trained.result.stderr)


def test_train_print_config_writes_yaml_to_stdout_and_trains_nothing(
    cli: Invoke, preprocessed: Run, tmp_path: Path
) -> None:
    save_dir = tmp_path / "model"
    args = ["train", str(preprocessed.path), "-o", str(save_dir), "--preset", "tiny"]
    result = cli([*args, "--set", "train.lr=0.01", "--seed", "7", "--print-config"])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load(result.stdout)
    assert config["train"]["lr"] == 0.01
    assert config["train"]["seed"] == 7
    assert not save_dir.exists()


# ------------------------------------------------------------------------------ translate


def test_translate_writes_output_line_i_for_input_line_i(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    src = val_pairs[0][:4]
    lines = [src[0], "", src[1], "   ", src[2], src[3], ""]
    result = cli(["translate", "-m", str(model_dir)], input=stdin_of(lines))
    assert result.exit_code == 0, result.output
    hyps = out_lines(result.stdout)
    assert len(hyps) == len(lines)
    for line, hyp in zip(lines, hyps, strict=True):
        if not line.strip():
            assert hyp == ""
    # Each sentence translated alone gives the same line: the order is kept.
    for line, hyp in zip(lines, hyps, strict=True):
        if line.strip():
            alone = cli(["translate", "-m", str(model_dir)], input=stdin_of([line]))
            assert alone.stdout == f"{hyp}\n"


def test_translate_keeps_logs_off_stdout(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    lines = val_pairs[0][:3]
    result = cli(["translate", "-m", str(model_dir), "-v"], input=stdin_of(lines))
    assert result.exit_code == 0, result.output
    hyps = out_lines(result.stdout)
    assert len(hyps) == len(lines)
    assert not any(word in result.stdout for word in ("INFO", "DEBUG", "WARNING", "nmtkit:"))


def test_translate_accepts_a_model_dir_or_a_checkpoint_file(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    text = stdin_of(val_pairs[0][:3])
    by_dir = cli(["translate", "-m", str(model_dir)], input=text)
    by_file = cli(["translate", "--model", str(model_dir / "best.pt")], input=text)
    assert by_dir.exit_code == by_file.exit_code == 0
    assert len(out_lines(by_dir.stdout)) == 3
    assert by_dir.stdout == by_file.stdout


def test_translate_greedy_equals_a_beam_search_of_one(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    """``--beam 1`` means greedy search, so the beam of one is the checkpoint's own search:
    translate then runs BeamSearch with K = 1, which must find what greedy search finds."""
    payload = torch.load(model_dir / "best.pt", weights_only=True)
    payload["config"]["search"]["strategy"] = {"name": "beam", "beam_size": 1}
    del payload["sha256"]  # an edited checkpoint no longer matches its checksum: load unchecked
    torch.save(payload, tmp_path / "beam1.pt")
    text = stdin_of(val_pairs[0][:5])
    # fp32: under bf16 (auto on a CPU with native bf16) a barely trained model's logits tie
    # often, and greedy's argmax and the beam's top-k need not break a tie alike.
    fp32 = ("--precision", "fp32")
    greedy = cli(["translate", "-m", str(model_dir), "--greedy", *fp32], input=text)
    beam1 = cli(["translate", "-m", str(tmp_path / "beam1.pt"), *fp32], input=text)
    assert greedy.exit_code == beam1.exit_code == 0
    assert "search: greedy" in flat(greedy.stderr)
    assert "search: beam (beam_size=1," in flat(beam1.stderr)
    assert len(out_lines(greedy.stdout)) == 5
    assert greedy.stdout == beam1.stdout


def test_translate_nbest_writes_moses_lines_best_first(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    lines = [val_pairs[0][0], "", val_pairs[0][1]]
    base = ["translate", "-m", str(model_dir)]
    nbest = cli([*base, "--output-format", "nbest", "--nbest", "2"], input=stdin_of(lines))
    text = cli(base, input=stdin_of(lines))
    assert nbest.exit_code == text.exit_code == 0, nbest.output
    rows = [line.split(" ||| ") for line in out_lines(nbest.stdout)]
    assert all(len(row) == 3 for row in rows), rows
    by_id: dict[int, list[tuple[str, float]]] = {}
    for index, hyp, score in rows:
        by_id.setdefault(int(index), []).append((hyp, float(score)))
    assert sorted(by_id) == [0, 1, 2]  # 0-based sentence numbers
    assert by_id[1] == [("", 0.0)]
    for i in (0, 2):
        (best, best_score), (_, second_score) = by_id[i]
        assert len(by_id[i]) == 2
        assert best_score >= second_score
        assert best == out_lines(text.stdout)[i]


def test_translate_jsonl_gives_scores_and_word_alignments(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    lines = [val_pairs[0][0], "", val_pairs[0][1]]
    args = ["translate", "-m", str(model_dir), "--output-format", "jsonl"]
    result = cli(args, input=stdin_of(lines))
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out_lines(result.stdout)]
    assert [r["id"] for r in records] == [0, 1, 2]
    assert [r["src"] for r in records] == lines
    assert records[1]["hyp"] == "" and records[1]["alignment"] == ""
    for record in (records[0], records[2]):
        assert isinstance(record["score"], float)
        assert_links_fit(
            record["alignment"], len(record["src"].split()), len(record["hyp"].split())
        )


def test_translate_reads_and_writes_gzipped_files(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    text = stdin_of(val_pairs[0][:3])
    src, out = tmp_path / "in.en.gz", tmp_path / "out.de.gz"
    src.write_bytes(gzip.compress(text.encode("utf-8")))
    result = cli(["translate", "-m", str(model_dir), "-i", str(src), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    piped = cli(["translate", "-m", str(model_dir)], input=text)
    assert gzip.decompress(out.read_bytes()).decode("utf-8") == piped.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.en.gz", "out.de.gz"]


def test_translate_works_in_a_real_pipe_with_clean_stdout(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    text = stdin_of([val_pairs[0][0], "", val_pairs[0][1]])
    proc = run(
        [str(BIN_DIR / "nmtkit"), "translate", "-m", str(model_dir), "--threads", "1"],
        input=text.encode("utf-8"),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    in_process = cli(["translate", "-m", str(model_dir)], input=text)
    assert proc.stdout.decode("utf-8") == in_process.stdout
    assert len(out_lines(proc.stdout.decode("utf-8"))) == 3
    assert b"Traceback" not in proc.stderr


def test_translate_streams_each_chunk_through_a_pipe(
    model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    args = ["translate", "-m", str(model_dir), "--chunk-size", "1", "--threads", "1"]
    proc = spawn(
        [str(BIN_DIR / "nmtkit"), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(f"{val_pairs[0][0]}\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "no translation came out while the input was still open"
        first = proc.stdout.readline()
        proc.stdin.write(f"{val_pairs[0][1]}\n")
        proc.stdin.close()
        rest = proc.stdout.read()
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert first.endswith("\n")
    assert len(out_lines(rest)) == 1


# ------------------------------------------------------------------------------ score


@pytest.fixture(scope="module")
def score_files(
    val_pairs: tuple[list[str], list[str]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Path]:
    """(hyp, ref, ref2): references from Multi30k, hypotheses as lightly broken copies."""
    folder = tmp_path_factory.mktemp("score")
    refs = val_pairs[1]
    hyps, refs2 = [], []
    for i, ref in enumerate(refs):
        words = ref.split()
        if i % 3 == 0:
            words[:2] = words[1::-1]
        elif i % 3 == 1:
            words = words[:-1]
        hyps.append(" ".join(words))
        refs2.append(" ".join(ref.split()[1:]))
    paths = (folder / "hyp.de", folder / "ref.de", folder / "ref2.de")
    for path, lines in zip(paths, (hyps, refs, refs2), strict=True):
        path.write_text(stdin_of(lines), "utf-8")
    return paths


def sacrebleu(*args: str) -> object:
    proc = run(
        [str(BIN_DIR / "sacrebleu"), *args, "-m", "bleu", "chrf", "ter"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout)


SACREBLEU_OPTIONS = [pytest.param([], 1, id="defaults"), pytest.param(["-lc"], 2, id="lc-2refs")]


@pytest.mark.parametrize(("options", "num_refs"), SACREBLEU_OPTIONS)
def test_score_prints_the_numbers_of_the_sacrebleu_command(
    cli: Invoke, score_files: tuple[Path, Path, Path], options: list[str], num_refs: int
) -> None:
    hyp, *refs = (str(p) for p in score_files)
    refs = refs[:num_refs]
    result = cli(["score", *(x for r in refs for x in ("-r", r)), "-i", hyp, *options])
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in out_lines(result.stdout)]
    expected = sacrebleu(*refs, "-i", hyp, "-b", "-w", "2", *options)
    assert [row[0] for row in rows] == ["BLEU", "chrF", "TER"]
    assert [row[1] for row in rows] == [f"{x:.2f}" for x in expected]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "options", [pytest.param([], id="defaults"), pytest.param(["-tok", "intl"], id="intl")]
)
def test_score_json_holds_the_scores_and_signatures_of_sacrebleu(
    cli: Invoke, score_files: tuple[Path, Path, Path], options: list[str]
) -> None:
    hyp, ref, ref2 = (str(p) for p in score_files)
    result = cli(
        ["score", "-r", ref, "-r", ref2, "--json", *options],
        input=Path(hyp).read_text("utf-8"),
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    expected = sacrebleu(ref, ref2, "-i", hyp, "-w", "4", *options)
    assert report["num_sentences"] == NUM_VALID
    ours = [(f"{s['score']:.4f}", s["signature"]) for s in report["scores"]]
    assert ours == [(f"{e['score']:.4f}", e["signature"]) for e in expected]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("mangle", "phrase"),
    [
        pytest.param(lambda s: s.replace(".", " ."), "look tokenized", id="tokenized"),
        pytest.param(lambda s: "\u2581" + s.replace(" ", " \u2581"), "subword marks", id="spm"),
    ],
)
def test_score_warns_on_stderr_about_tokenized_or_segmented_hypotheses(
    cli: Invoke, score_files: tuple[Path, Path, Path], mangle: object, phrase: str
) -> None:
    hyp, ref, _ = score_files
    hyps = [mangle(line) for line in hyp.read_text("utf-8").splitlines()]  # type: ignore[operator]
    result = cli(["score", "-r", str(ref)], input=stdin_of(hyps))
    assert result.exit_code == 0, result.output
    assert "nmtkit: warning:" in result.stderr
    assert phrase in flat(result.stderr)
    assert [row.split("\t")[0] for row in out_lines(result.stdout)] == ["BLEU", "chrF", "TER"]


def test_score_paired_bootstrap_of_positional_systems_equals_sacrebleu(
    cli: Invoke, score_files: tuple[Path, Path, Path]
) -> None:
    hyp, ref, ref2 = (str(p) for p in score_files)
    args = ["--paired-bs", "--paired-bs-n", "40"]
    result = cli(["score", "-r", ref, hyp, ref2, "-M", "bleu", "--json", *args])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["systems"] == [hyp, ref2]
    proc = run(  # the suite's environment has no SACREBLEU_SEED (tests/processes.py)
        [str(BIN_DIR / "sacrebleu"), ref, "-i", hyp, ref2, "-m", "bleu", "-f", "json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    expected = [row["BLEU"] for row in json.loads(proc.stdout)]
    (bleu,) = report["significance"]["metrics"]
    for ours, theirs in zip(bleu["results"], expected, strict=True):
        for key in ("score", "p_value", "mean", "ci"):
            assert ours[key] == pytest.approx(theirs[key]), key
    assert bleu["results"][0]["p_value"] is None
    assert "bs:40|seed:12345" in bleu["signature"]


def test_score_several_systems_prints_a_line_per_system_and_metric(
    cli: Invoke, score_files: tuple[Path, Path, Path]
) -> None:
    hyp, ref, ref2 = (str(p) for p in score_files)
    result = cli(["score", "-r", ref, "-i", hyp, ref2, "--name", "A", "--name", "B", "-M", "bleu"])
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in out_lines(result.stdout)]
    assert [row[:2] for row in rows] == [["A", "BLEU"], ["B", "BLEU"]]
    assert "A" in flat(result.stderr) and "nrefs:1" in result.stderr


def test_score_by_source_length_reports_buckets_and_draws_figure_2(
    cli: Invoke,
    score_files: tuple[Path, Path, Path],
    val_pairs: tuple[list[str], list[str]],
    tmp_path: Path,
) -> None:
    hyp, ref, ref2 = (str(p) for p in score_files)
    src = tmp_path / "src.en"
    src.write_text(stdin_of(val_pairs[0]), "utf-8")
    plot = tmp_path / "fig2.png"
    args = ["--by-length", "--source", str(src), "--buckets", "0,10,15", "--plot", str(plot)]
    result = cli(["score", "-r", ref, hyp, ref2, "-M", "bleu", "--json", *args])
    assert result.exit_code == 0, result.output
    by_length = json.loads(result.stdout)["by_length"]
    assert by_length["by"] == "source"
    assert [b["label"] for b in by_length["buckets"]] == ["0-9", "10-14", "15+"]
    assert sum(b["num_sentences"] for b in by_length["buckets"]) == NUM_VALID
    assert all(len(b["bleu"]) == 2 for b in by_length["buckets"])
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert sorted(tmp_path.iterdir()) == [plot, src]


# ------------------------------------------------------------------------------ align


@pytest.fixture(scope="module")
def align_pairs(
    val_pairs: tuple[list[str], list[str]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("align")
    src, tgt = folder / "src.en", folder / "tgt.de"
    src.write_text(stdin_of(val_pairs[0][:4]), "utf-8")
    tgt.write_text(stdin_of(val_pairs[1][:4]), "utf-8")
    return src, tgt


def align_args(model_dir: Path, pairs: tuple[Path, Path], *extra: str) -> list[str]:
    return [
        "align",
        "-m",
        str(model_dir),
        "--source",
        str(pairs[0]),
        "--target",
        str(pairs[1]),
        *extra,
    ]


def test_align_writes_one_pharaoh_line_per_pair_with_valid_indices(
    cli: Invoke, model_dir: Path, align_pairs: tuple[Path, Path]
) -> None:
    result = cli(align_args(model_dir, align_pairs))
    assert result.exit_code == 0, result.output
    src, tgt = (p.read_text("utf-8").splitlines() for p in align_pairs)
    lines = out_lines(result.stdout)
    assert len(lines) == len(src)
    for line, s, t in zip(lines, src, tgt, strict=True):
        assert_links_fit(line, len(s.split()), len(t.split()))


def test_align_soft_writes_json_matrices_whose_rows_sum_to_one(
    cli: Invoke, model_dir: Path, align_pairs: tuple[Path, Path]
) -> None:
    result = cli(align_args(model_dir, align_pairs, "--soft"))
    assert result.exit_code == 0, result.output
    src, tgt = (p.read_text("utf-8").splitlines() for p in align_pairs)
    records = [json.loads(line) for line in out_lines(result.stdout)]
    assert len(records) == len(src)
    for record, s, t in zip(records, src, tgt, strict=True):
        assert (record["src"], record["tgt"]) == (s.split(), t.split())
        assert len(record["weights"]) == len(record["tgt"])
        for row in record["weights"]:
            assert len(row) == len(record["src"])
            assert sum(row) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize(("fmt", "magic"), [("png", b"\x89PNG"), ("svg", b"<svg")])
def test_align_plot_writes_one_heatmap_per_pair(
    cli: Invoke,
    model_dir: Path,
    align_pairs: tuple[Path, Path],
    tmp_path: Path,
    fmt: str,
    magic: bytes,
) -> None:
    plots = tmp_path / "plots"
    args = align_args(model_dir, align_pairs, "--plot", str(plots), "--limit", "2")
    result = cli([*args, "--plot-format", fmt])
    assert result.exit_code == 0, result.output
    assert len(out_lines(result.stdout)) == 2
    pictures = sorted(plots.iterdir())
    assert [p.suffix for p in pictures] == [f".{fmt}"] * 2
    for picture in pictures:
        assert magic in picture.read_bytes()[:400]


@pytest.mark.parametrize("limit", [0, 1, 3, 10])
def test_align_limit_aligns_only_the_first_pairs(
    cli: Invoke, model_dir: Path, align_pairs: tuple[Path, Path], limit: int
) -> None:
    result = cli(align_args(model_dir, align_pairs, "--limit", str(limit)))
    assert result.exit_code == 0, result.output
    assert len(out_lines(result.stdout)) == min(limit, 4)


@pytest.mark.parametrize("soft", [False, True], ids=["pharaoh", "soft"])
def test_align_gives_an_empty_alignment_when_a_side_is_empty(
    cli: Invoke, model_dir: Path, tmp_path: Path, soft: bool
) -> None:
    src, tgt = tmp_path / "src.en", tmp_path / "tgt.de"
    src.write_text("A dog runs.\nA cat.\n\n", "utf-8")
    tgt.write_text("Ein Hund rennt.\n\nEine Katze.\n", "utf-8")
    result = cli(align_args(model_dir, (src, tgt), *(["--soft"] if soft else [])))
    assert result.exit_code == 0, result.output
    lines = out_lines(result.stdout)
    assert len(lines) == 3
    if soft:
        records = [json.loads(line) for line in lines]
        assert records[1] == {"src": ["A", "cat."], "tgt": [], "weights": []}
        assert records[2]["src"] == [] and records[2]["weights"] == [[], []]
    else:
        assert lines[1:] == ["", ""]
        assert_links_fit(lines[0], 3, 3)


def test_align_output_file_holds_what_stdout_would(
    cli: Invoke, model_dir: Path, align_pairs: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.align"
    to_file = cli(align_args(model_dir, align_pairs, "--output", str(out)))
    to_stdout = cli(align_args(model_dir, align_pairs))
    assert to_file.exit_code == 0, to_file.output
    assert to_file.stdout == ""
    assert out.read_text("utf-8") == to_stdout.stdout
